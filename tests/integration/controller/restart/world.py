"""The restart tests' cluster: the harness's `Cluster` whose controller is `aiolbc run`
(`run()`, support/process.py), each start a new process-level state, plus the placeholders
case values use (`{cert}`, `{oidc}`, ...) and the ids the cases created.

The LOW lane is frozen in every run (a verification may start, then waits about 1,000 s for its
second AWS call), so whatever reaches AWS after a restart was reconciled at NORMAL priority.
`snapshot` reads what AWS holds for a stack, straight from moto (never through the controller's
pool), together with the stack's managed TargetGroupBindings."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.apis import INGRESS_ANNOTATION_PREFIX, SERVICE_ANNOTATION_PREFIX
from tests.support.cluster import Cluster

SVC = SERVICE_ANNOTATION_PREFIX
ALB = INGRESS_ANNOTATION_PREFIX

# Every verification waits for the shared budget: one may start, none can finish in a test.
FROZEN_LOW_LANE = ("--checkpoint-verify-qps", "0.001", "--checkpoint-verify-burst", "1",
                   "--checkpoint-max-wait", "100h", "--checkpoint-verify-aws-qps", "0.001",
                   "--checkpoint-verify-aws-burst", "1")
# The cases' hand-written bindings ask for CIDR rules, which need the administrator's grant.
NETWORKING_GRANT = ("--targetgroupbinding-networking-unrestricted-namespaces", "default")


@dataclass
class World(Cluster):
    extra: dict[str, str] = field(default_factory=dict)  # ids the cases created (SGs, TGs, ...)

    # ---- placeholders in case values -----------------------------------------------------

    def values(self, name: str) -> dict[str, str]:
        def oidc(issuer: str) -> str:
            return json.dumps({"issuer": issuer, "authorizationEndpoint": f"{issuer}/auth",
                               "tokenEndpoint": f"{issuer}/token",
                               "userInfoEndpoint": f"{issuer}/me",
                               "secretName": f"{name}-oidc"})
        return {"name": name, "cert": self.seed.certificate_arn,
                "cert2": self.extra.get("cert2", ""),
                "private_subnet": self.seed.private_subnets[0],
                "public_subnets": ",".join(self.seed.public_subnets),
                "security_group": self.extra.get("security_group", ""),
                "prefix_list": self.extra.get("prefix_list", ""),
                **{f"eip{i}": self.extra.get(f"eip{i}", "") for i in range(1, 7)},
                **{k: self.extra.get(k, "") for k in ("ipv6_a", "ipv6_b", "nat_prefix_b")},
                "oidc": oidc("https://idp.example.com"),
                "oidc2": oidc("https://idp2.example.com"),
                "tg_b": self.extra.get(f"tg:{name}-b", ""),
                "tg_b_name": self.extra.get(f"tg-name:{name}-b", ""),
                "web_acl": self.extra.get("web_acl", ""),
                "web_acl2": self.extra.get("web_acl2", ""),
                "waf_id": self.extra.get("waf_id", ""), "waf_id2": self.extra.get("waf_id2", "")}

    def fill(self, items: dict[str, str], name: str) -> dict[str, str]:
        values = self.values(name)
        return {k: _fill_text(v, values) for k, v in items.items()}

    def fill_obj(self, value: Any, name: str = "") -> Any:
        values = self.values(name)
        if isinstance(value, str):
            if value == "{public_subnet_list}":
                return list(self.seed.public_subnets)
            return _fill_text(value, values)
        if isinstance(value, list):
            return [self.fill_obj(v, name) for v in value]
        if isinstance(value, dict):
            return {k: self.fill_obj(v, name) for k, v in value.items()}
        return value

    # ---- the controller -------------------------------------------------------------------

    def argv(self, *flags: str, cluster: str | None = None, region: str | None = None,
             vpc_id: str | None = None, through_proxy: bool = False) -> list[str]:
        """`aiolbc run`'s flags with the LOW lane frozen and the networking grant, then
        `flags`."""
        return super().argv(*FROZEN_LOW_LANE, *NETWORKING_GRANT, *flags, cluster=cluster,
                            region=region, vpc_id=vpc_id, through_proxy=through_proxy)

    # ---- AWS --------------------------------------------------------------------------------

    async def snapshot(self, stacks: Sequence[str], *,
                       regions: Iterable[str] | None = None) -> str:
        """What AWS holds for these stacks (`ingress.k8s.aws/stack` or `service.k8s.aws/stack`
        values), and the stacks' managed bindings, as canonical JSON."""
        aws = await self.aws.stacks(stacks, regions=list(regions or [self.seed.region]))
        bindings: dict[str, Any] = {}
        for item in await self.bindings():
            labels = item["metadata"].get("labels") or {}
            stack = labels.get("ingress.k8s.aws/stack") or (
                f"{labels.get('ingress.k8s.aws/stack-namespace')}/"
                f"{labels.get('ingress.k8s.aws/stack-name')}"
                if labels.get("ingress.k8s.aws/stack-name") else None) or (
                f"{labels.get('service.k8s.aws/stack-namespace')}/"
                f"{labels.get('service.k8s.aws/stack-name')}"
                if labels.get("service.k8s.aws/stack-name") else None)
            if stack in stacks:
                bindings[item["metadata"]["name"]] = item.get("spec")
        return json.dumps({"aws": aws, "bindings": bindings}, sort_keys=True, default=str)

    async def target_group(self, name: str, *, target_type: str = "ip",
                           protocol: str = "TCP", port: int = 80, vpc_id: str | None = None,
                           tags: dict[str, str] | None = None) -> str:
        """A target group made by hand, remembered as `{tg_b}`/`{tg_b_name}` placeholders."""
        arn = await super().target_group(name, target_type=target_type, protocol=protocol,
                                         port=port, vpc_id=vpc_id, tags=tags)
        self.extra[f"tg:{name}"] = arn
        self.extra[f"tg-name:{name}"] = name
        return arn


def _fill_text(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text
