"""Changes made while the controller was down that a restart once treated as unchanged. Each
test stops `aiolbc run`, makes the change, restarts it as a new process-level state with the
LOW lane frozen, and reads the result from AWS (moto) and the API server."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis import INGRESS_STACK_NAME_LABEL, TARGETGROUPBINDINGS
from controller.aws import AWSError
from runtime.resources import INGRESSES, SECRETS, SERVICES
from tests.integration.controller.restart.cases import HTTPS, OIDC_SECRET
from tests.integration.controller.restart.test_matrix import tls_secret
from tests.integration.controller.restart.world import World
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow


async def _oidc_secrets(world: World) -> list[str]:
    """The client secret of every authenticate-oidc action in moto, which, unlike AWS, shows
    what was last written."""
    found = []
    for lb in await world.aws.load_balancers():
        for listener in (await world.aws.listeners(lb["LoadBalancerArn"])).values():
            rules = await world.aws.elbv2("DescribeRules", ListenerArn=listener["ListenerArn"])
            for rule in rules["Rules"]:
                for action in rule["Actions"]:
                    config = action.get("AuthenticateOidcConfig")
                    if config is not None:
                        found.append(str(config.get("ClientSecret")))
    return found


async def test_oidc_client_secret_rotated_while_down_reaches_aws(world: World) -> None:
    await world.backend("app-be")
    await world.secret("app-oidc", OIDC_SECRET)
    await world.ingress("app", {"target-type": "ip", **world.fill(HTTPS, "app"),
                                "auth-type": "oidc",
                                "auth-idp-oidc": world.values("app")["oidc"]},
                        backend="app-be")
    first = await world.run()
    try:
        await eventually(lambda: world.checkpoint(INGRESSES, "app"), timeout=60)
        assert await _oidc_secrets(world) == ["secret-one"]
        before = await world.checkpoint(INGRESSES, "app")
    finally:
        await first.kill()

    await world.secret("app-oidc", {**OIDC_SECRET, "clientSecret": "secret-two"})

    second = await world.run()
    try:
        async def rotated() -> bool:
            return await _oidc_secrets(world) == ["secret-two"]

        await eventually(rotated, timeout=60)
        await eventually(lambda: _changed(world, before), timeout=30)
    finally:
        await second.kill()


async def _served_certificate(world: World) -> tuple[str, str] | None:
    """(ARN, serial) of the certificate the HTTPS listener serves."""
    for lb in await world.aws.load_balancers():
        for listener in (await world.aws.listeners(lb["LoadBalancerArn"])).values():
            for cert in listener.get("Certificates") or []:
                arn = str(cert["CertificateArn"])
                detail = await world.aws.call("acm", "DescribeCertificate", CertificateArn=arn)
                return arn, str(detail["Certificate"].get("Serial"))
    return None


async def test_tls_secret_rotated_while_down_reaches_acm(world: World) -> None:
    """The Secret's certificate version is in the checkpoint: a rotation made while the
    controller was down is a real change after the restart, re-imported under the same ARN."""
    await world.backend("tls-be")
    await world.create(SECRETS, tls_secret("tls-cert", "tls.example.com"))
    await world.ingress("tls", {"target-type": "ip", "listen-ports": '[{"HTTPS": 443}]'},
                        backend="tls-be", tls_hosts=["tls.example.com"])
    ing = await world.get(INGRESSES, "tls")
    ing["spec"]["tls"][0]["secretName"] = "tls-cert"
    await world.client.update(INGRESSES, ing)
    first = await world.run("--enable-secret-certificates=true")
    try:
        await eventually(lambda: world.checkpoint(INGRESSES, "tls"), timeout=60)
        served = await _served_certificate(world)
        assert served is not None
        before = await world.checkpoint(INGRESSES, "tls")
    finally:
        await first.kill()

    secret = await world.get(SECRETS, "tls-cert")
    secret["data"] = tls_secret("tls-cert", "tls.example.com")["data"]
    await world.client.update(SECRETS, secret)

    second = await world.run("--enable-secret-certificates=true")
    try:
        async def rotated() -> bool:
            now = await _served_certificate(world)
            return now is not None and now[0] == served[0] and now[1] != served[1]

        await eventually(rotated, timeout=60)

        async def recorded() -> bool:
            # Reset before the re-import, written once the deploy succeeded.
            now = await world.checkpoint(INGRESSES, "tls")
            return bool(now) and now != before

        await eventually(recorded, timeout=30)
    finally:
        await second.kill()


async def test_tls_secret_dropped_while_down_deletes_its_certificate(world: World) -> None:
    """A new process learns the certificates it imported from their tags: one the group no
    longer uses (its Ingress now names certificate-arn) is deleted after the restart."""
    await world.backend("drop-be")
    await world.create(SECRETS, tls_secret("drop-cert", "drop.example.com"))
    await world.ingress("drop", {"target-type": "ip", "listen-ports": '[{"HTTPS": 443}]'},
                        backend="drop-be", tls_hosts=["drop.example.com"])
    ing = await world.get(INGRESSES, "drop")
    ing["spec"]["tls"][0]["secretName"] = "drop-cert"
    await world.client.update(INGRESSES, ing)
    first = await world.run("--enable-secret-certificates=true")
    try:
        await eventually(lambda: world.checkpoint(INGRESSES, "drop"), timeout=60)
        served = await _served_certificate(world)
        assert served is not None
    finally:
        await first.kill()

    ing = await world.get(INGRESSES, "drop")
    ing["metadata"]["annotations"]["alb.ingress.kubernetes.io/certificate-arn"] = \
        world.seed.certificate_arn
    await world.client.update(INGRESSES, ing)

    second = await world.run("--enable-secret-certificates=true")
    try:
        async def deleted() -> bool:
            try:
                await world.aws.call("acm", "DescribeCertificate", CertificateArn=served[0])
            except AWSError as exc:
                return exc.code == "ResourceNotFoundException"
            return False

        await eventually(deleted, timeout=60)
        now = await _served_certificate(world)
        assert now is not None
        assert now[0] == world.seed.certificate_arn
    finally:
        await second.kill()


async def _changed(world: World, before: str) -> bool:
    now = await world.checkpoint(INGRESSES, "app")
    return bool(now) and now != before


@pytest.mark.parametrize("finalizer", [True, False], ids=["being-deleted", "gone"])
async def test_binding_deleted_while_down_is_deregistered_at_once(world: World,
                                                                  finalizer: bool) -> None:
    """`finalizer`: the Service's managed binding still carries its finalizer when deleted
    (the restart sees it being deleted), or had none yet, or lost it, so it is simply gone (the
    restart sees nothing of it: only the Service's priority decision can tell)."""
    await world.nlb_service("backend", load_balancer_class="example.com/other",
                            endpoint_ips=("10.0.4.10", "10.0.4.11"))
    arn = await world.target_group("by-hand", target_type="ip")
    await world.binding("mine", service="backend", arn=arn, target_type=None)
    # A Service whose managed binding someone deletes by hand, too.
    await world.nlb_service("web", endpoint_ips=("10.0.2.10",))
    first = await world.run()
    try:
        async def registered() -> bool:
            managed = await _managed_binding(world, "web")
            return (len(await world.aws.registered(arn)) == 2
                    and bool(await world.checkpoint(SERVICES, "web"))
                    and managed is not None
                    and await world.aws.registered(managed["spec"]["targetGroupARN"])
                    == {("10.0.2.10", 8080)})
        await eventually(registered, timeout=60)
        await first.settled()
        managed = await _managed_binding(world, "web")
        assert managed is not None
    finally:
        await first.kill()

    await world.delete(TARGETGROUPBINDINGS, "mine")
    name = managed["metadata"]["name"]
    if not finalizer:
        await world.patch(TARGETGROUPBINDINGS, name, {"metadata": {"finalizers": None}})
    await world.delete(TARGETGROUPBINDINGS, name)
    assert await world.gone(TARGETGROUPBINDINGS, name) is not finalizer

    second = await world.run()
    try:
        async def deregistered() -> bool:
            return (await world.aws.registered(arn) == set()
                    and await world.gone(TARGETGROUPBINDINGS, "mine"))
        await eventually(deregistered, timeout=30)

        async def recreated() -> bool:
            again = await _managed_binding(world, "web")
            if again is None or again["metadata"]["uid"] == managed["metadata"]["uid"]:
                return False
            tg = again["spec"]["targetGroupARN"]
            return await world.aws.registered(tg) == {("10.0.2.10", 8080)}
        await eventually(recreated, timeout=30)
    finally:
        await second.kill()


async def test_ingress_binding_gone_while_down_is_recreated_at_once(world: World) -> None:
    """An Ingress's managed binding that is simply gone after the restart (deleted without
    its finalizer): nothing of it is replayed, and the group's checkpoint still matches."""
    await world.backend("app-be", endpoint_ips=("10.0.3.10",))
    await world.ingress("app", {"target-type": "ip"}, backend="app-be")
    first = await world.run()
    try:
        async def deployed() -> dict[str, Any] | None:
            managed = await _ingress_binding(world)
            if (managed is None or not await world.checkpoint(INGRESSES, "app")
                    or await world.aws.registered(managed["spec"]["targetGroupARN"])
                    != {("10.0.3.10", 8080)}):
                return None
            return managed
        await eventually(deployed, timeout=60)
        await first.settled()
        managed = await deployed()
        assert managed is not None
    finally:
        await first.kill()

    name = managed["metadata"]["name"]
    await world.patch(TARGETGROUPBINDINGS, name, {"metadata": {"finalizers": None}})
    await world.delete(TARGETGROUPBINDINGS, name)
    assert await world.gone(TARGETGROUPBINDINGS, name)

    second = await world.run()
    try:
        async def recreated() -> bool:
            again = await _ingress_binding(world)
            return (again is not None and again["metadata"]["uid"] != managed["metadata"]["uid"]
                    and again["spec"]["targetGroupARN"] == managed["spec"]["targetGroupARN"])
        await eventually(recreated, timeout=30)
    finally:
        await second.kill()


async def _ingress_binding(world: World) -> dict[str, Any] | None:
    for item in (await world.client.list(TARGETGROUPBINDINGS, world.namespace))["items"]:
        labels = item["metadata"].get("labels") or {}
        if (labels.get(INGRESS_STACK_NAME_LABEL) == "app"
                and not item["metadata"].get("deletionTimestamp")):
            return dict(item)
    return None


async def _managed_binding(world: World, service: str) -> dict[str, Any] | None:
    for item in (await world.client.list(TARGETGROUPBINDINGS, world.namespace))["items"]:
        labels = item["metadata"].get("labels") or {}
        if (labels.get("service.k8s.aws/stack-name") == service
                and not item["metadata"].get("deletionTimestamp")):
            return dict(item)
    return None


async def _alb_tags(world: World) -> list[dict[str, str]]:
    arns = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()
            if lb["Type"] == "application"]
    return list((await world.aws.tags(arns)).values())


async def test_default_tags_changed_while_down_retag_every_alb(world: World) -> None:
    for name in ("a", "b", "c"):
        await world.backend(f"{name}-be")
        await world.ingress(name, {"target-type": "ip"}, backend=f"{name}-be")
    first = await world.run("--default-tags=team=red")
    try:
        async def tagged(value: str) -> bool:
            tags = await _alb_tags(world)
            return len(tags) == 3 and all(t.get("team") == value for t in tags)
        await eventually(lambda: tagged("red"), timeout=60)
    finally:
        await first.kill()

    second = await world.run("--default-tags=team=blue")
    try:
        await eventually(lambda: tagged("blue"), timeout=30)
    finally:
        await second.kill()
