"""`InstanceMetadataStandIn`: the EC2 instance metadata service (IMDS) on loopback, as an
instance with IMDSv2 required answers it (AWS EC2 User Guide, "Use the Instance Metadata Service
to access instance metadata"):

- `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds` (1 to 21600) answers a
  token, echoing the TTL in that header; a missing or bad TTL is 400; a PUT carrying
  `X-Forwarded-For` is refused (403), as IMDS refuses tokens to requests through a proxy;
- every `GET` needs a live token in `X-aws-ec2-metadata-token` (401 without, or when expired);
- `GET /latest/meta-data/<path>` answers the instance's values as text: `mac`, `instance-id`,
  `placement/region`, `placement/availability-zone`,
  `network/interfaces/macs/<mac>/vpc-id`; an unknown path is 404.

`unavailable=True` answers every request 503 (an instance with the metadata service off looks
like no answer at all; a test uses a closed port for that). Tokens expire on the injected clock.
`requests` logs (method, path) for tests."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from types import TracebackType

from aiohttp import web

from runtime.clock import Clock, RealClock

TOKEN_PATH = "/latest/api/token"
TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER = "X-aws-ec2-metadata-token"
MAX_TTL = 21600


@dataclass(frozen=True, slots=True)
class Instance:
    """What the stand-in's instance says about itself."""

    vpc_id: str
    region: str = "us-west-2"
    instance_id: str = "i-0123456789abcdef0"
    mac: str = "0e:12:34:56:78:9a"
    availability_zone: str = ""

    def metadata(self) -> dict[str, str]:
        return {
            "mac": self.mac,
            "instance-id": self.instance_id,
            "placement/region": self.region,
            "placement/availability-zone": self.availability_zone or f"{self.region}a",
            f"network/interfaces/macs/{self.mac}/vpc-id": self.vpc_id,
        }


@dataclass
class InstanceMetadataStandIn:
    instance: Instance
    clock: Clock = field(default_factory=RealClock)
    unavailable: bool = False
    requests: list[tuple[str, str]] = field(default_factory=list)
    _tokens: dict[str, float] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    _url: str = ""

    @property
    def url(self) -> str:
        return self._url

    async def start(self) -> InstanceMetadataStandIn:
        if self._runner is not None:
            return self
        app = web.Application(client_max_size=4096)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self._url = f"http://{host}:{port}"
        return self

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> InstanceMetadataStandIn:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path))
        if self.unavailable:
            return web.Response(status=503)
        if request.path == TOKEN_PATH:
            return self._token(request)
        if request.method != "GET":
            return web.Response(status=405)
        expires = self._tokens.get(request.headers.get(TOKEN_HEADER, ""))
        if expires is None or expires <= self.clock.now():
            return web.Response(status=401)
        prefix = "/latest/meta-data/"
        if not request.path.startswith(prefix):
            return web.Response(status=404)
        value = self.instance.metadata().get(request.path[len(prefix):])
        if value is None:
            return web.Response(status=404)
        return web.Response(text=value, content_type="text/plain")

    def _token(self, request: web.Request) -> web.Response:
        if request.method != "PUT":
            return web.Response(status=405)
        if "X-Forwarded-For" in request.headers:
            return web.Response(status=403)
        try:
            ttl = int(request.headers.get(TTL_HEADER, ""))
        except ValueError:
            return web.Response(status=400)
        if not 1 <= ttl <= MAX_TTL:
            return web.Response(status=400)
        token = secrets.token_urlsafe(32)
        self._tokens[token] = self.clock.now() + ttl
        return web.Response(text=token, content_type="text/plain",
                            headers={TTL_HEADER: str(ttl)})


__all__ = ["Instance", "InstanceMetadataStandIn"]
