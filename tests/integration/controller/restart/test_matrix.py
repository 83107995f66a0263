"""Restart correctness: every input a model reads, changed while the controller is down, gives
its object NORMAL priority and reaches AWS after the restart.

Each family of cases runs in one world: the objects are created, a first `aiolbc run`
converges them, it is killed, every change is made, control objects get drift by hand that
only a LOW-lane verification would repair, and a second run (a new process-level state) starts
with its LOW lane frozen. Every change must show in AWS while the controls keep their drift:
what reached AWS was reconciled at NORMAL priority. The catalogue tests make sure no
annotation, class-parameter field, binding field or flag is left without a case.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from controller.annotations import recording
from controller.apis import LEGACY_CLASS_ANNOTATION, TARGETGROUPBINDINGS, USE_ANNOTATION
from controller.apis.targetgroupbinding import ServiceReference, TargetGroupBindingSpec
from controller.config import add_flags
from controller.ingress.annotations import INGRESS_ANNOTATION_KEYS
from controller.ingress.classes import ClassParams
from controller.service import SERVICE_ANNOTATION_KEYS
from controller.standins import MotoStandIn, create_pod_eni, seed_vpc
from runtime.resources import INGRESSES, SECRETS, SERVICES
from runtime.webhook.certs import issue_ca, issue_serving
from tests.integration.controller.restart.cases import (
    ACM_FLAGS,
    ACM_PCA,
    ACM_PCA2,
    HTTPS,
    NON_MODEL_FLAGS,
    NOT_DEPLOYED,
    POLICY,
    Case,
    addon_cases,
    binding_cases,
    ingress_cases,
    make_web_acls,
    other_cases,
    params_cases,
    service_cases,
)
from tests.integration.controller.restart.world import ALB, SVC, World
from tests.support.aws import stack_of
from tests.support.objects import ingress_path
from tests.support.process import ControllerRun
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow

ALL_CASES = [*service_cases(), *ingress_cases(), *params_cases(), *binding_cases(),
             *addon_cases(),
             *other_cases()]
DRIFT = {"Key": "drift", "Value": "by-hand"}


def _aliases(model: Any, skip: Sequence[str] = ()) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items() if name not in skip}


# ---- the catalogue is complete ---------------------------------------------------------------

def _covered() -> set[str]:
    return {c for case in ALL_CASES for c in case.covers} | set(NOT_DEPLOYED)


def test_every_annotation_the_parsers_read_has_a_case() -> None:
    missing = (SERVICE_ANNOTATION_KEYS | INGRESS_ANNOTATION_KEYS | {LEGACY_CLASS_ANNOTATION}
               ) - _covered()
    assert not missing, f"annotations without a restart case: {sorted(missing)}"


def test_every_class_parameter_and_binding_field_has_a_case() -> None:
    fields = {"params:" + a for a in _aliases(ClassParams, skip=("name",))}
    fields |= {"tgb:" + a for a in _aliases(TargetGroupBindingSpec, skip=("service_ref",))}
    fields |= {"tgb:serviceRef." + a for a in _aliases(ServiceReference)}
    missing = fields - _covered()
    assert not missing, f"fields without a restart case: {sorted(missing)}"


def test_case_names_are_unique_dns_labels() -> None:
    names = [case.name for case in ALL_CASES]
    assert len(names) == len(set(names))
    assert all(n.replace("-", "").isalnum() and n.islower() and len(n) <= 40 for n in names)


def _all_flags() -> set[str]:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return {opt for action in parser._actions for opt in action.option_strings
            if opt.startswith("--") and opt != "--help"}


def test_every_flag_is_either_a_model_input_or_listed_with_a_reason() -> None:
    model = {flag for run in FLAG_RUNS for flag in run.flags}
    unknown = _all_flags() - model - set(NON_MODEL_FLAGS)
    assert not unknown, f"flags neither in a restart case nor in NON_MODEL_FLAGS: {unknown}"
    assert not model & set(NON_MODEL_FLAGS)
    assert (model | set(NON_MODEL_FLAGS)) <= _all_flags()


# ---- the world -------------------------------------------------------------------------------

async def _controls(world: World) -> None:
    await world.nlb_service("control-svc")
    await world.backend("control-ing-be")
    await world.ingress("control-ing", {"target-type": "ip"}, backend="control-ing-be")


async def _add_drift(world: World) -> list[str]:
    lbs = await world.aws.load_balancers()
    tags = await world.aws.tags(lb["LoadBalancerArn"] for lb in lbs)
    controls = [a for a, t in tags.items() if t.get("service.k8s.aws/stack") ==
                "default/control-svc" or t.get("ingress.k8s.aws/stack") ==
                "default/control-ing"]
    assert len(controls) == 2
    await world.aws.elbv2("AddTags", ResourceArns=controls, Tags=[DRIFT])
    return controls


async def _drift_left(world: World, arns: list[str]) -> int:
    tags = await world.aws.tags(arns)
    return sum(tags[arn].get(DRIFT["Key"]) == DRIFT["Value"] for arn in arns)


async def _converged(world: World, cases: Sequence[Case]) -> list[str]:
    pending = []
    for case in cases:
        if case.ready is not None and not await case.ready(world, case.name):
            pending.append(case.name)
    for res, name in ((SERVICES, "control-svc"), (INGRESSES, "control-ing")):
        if not await world.checkpoint(res, name):
            pending.append(name)
    return pending


async def _run_matrix(world: World, cases: Sequence[Case], *, through_proxy: bool = False,
                      flags: Sequence[str] = ()) -> set[str]:
    """Both runs; returns every annotation key the controllers looked up."""
    with recording() as reads:
        for case in cases:
            await case.setup(world, case.name)
        await _controls(world)
        first = await world.run(*flags, through_proxy=through_proxy)
        try:
            await eventually(lambda: _pending_none(_converged(world, cases)), timeout=180,
                             interval=0.5, message="first run did not converge")
            before = {case.name: await case.observe(world, case.name) for case in cases}
        finally:
            await first.kill()

        for case in cases:
            await case.change(world, case.name)
        controls = await _add_drift(world)

        second = await world.run(*flags, through_proxy=through_proxy)
        try:
            async def reached() -> list[str]:
                return [case.name for case in cases
                        if await case.observe(world, case.name) == before[case.name]]

            async def none_left() -> bool:
                return not await reached()

            try:
                await eventually(none_left, timeout=180, interval=0.5)
            except AssertionError:
                raise AssertionError(f"changes made while down that did not reach AWS: "
                                     f"{await reached()}") from None
            # Nothing LOW ran: the controls' drift is still there.
            assert await _drift_left(world, controls) == 2
        finally:
            await second.kill()
    return reads


async def _pending_none(pending: Any) -> bool:
    return not await pending


def _outside_catalogues(reads: set[str]) -> set[str]:
    ours = {k for k in reads if k.startswith((SVC, ALB))}
    return ours - SERVICE_ANNOTATION_KEYS - INGRESS_ANNOTATION_KEYS


async def test_service_annotations_changed_while_down(world: World) -> None:
    reads = await _run_matrix(world, service_cases())
    assert not _outside_catalogues(reads)
    assert reads & SERVICE_ANNOTATION_KEYS == SERVICE_ANNOTATION_KEYS


async def test_ingress_annotations_changed_while_down(world: World) -> None:
    reads = await _run_matrix(world, ingress_cases(), flags=ACM_FLAGS)
    assert not _outside_catalogues(reads)
    assert reads >= INGRESS_ANNOTATION_KEYS


async def test_class_parameters_bindings_secrets_ports_membership_and_deletion(
        world: World) -> None:
    reads = await _run_matrix(world, [*params_cases(), *binding_cases(), *other_cases()])
    assert not _outside_catalogues(reads)


async def test_waf_and_shield_changed_while_down(world: World) -> None:
    # Through the fault proxy, which answers WAF Classic Regional (moto has none).
    reads = await _run_matrix(world, addon_cases(), through_proxy=True)
    assert not _outside_catalogues(reads)


# ---- flags ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FlagRun:
    """One restart with `flags` changed (cumulatively, in the order of FLAG_RUNS); `objects`
    are the (kind, name) whose stacks must change (or, for `f-eni`, the rules on its pod's
    groups)."""

    flags: dict[str, str]
    objects: tuple[str, ...]
    region: str | None = None


FLAG_RUNS: list[FlagRun] = [
    # Off in the first run: each Ingress asking for its addon was refused; on, it deploys.
    FlagRun({"--enable-waf": "true", "--enable-wafv2": "true", "--enable-shield": "true"},
            ("f-waf", "f-wafv2", "f-shield")),
    FlagRun({"--default-tags": "team=a"}, ("f-svc", "f-ing")),
    # Off in the first run: the Ingress naming a missing Service and a missing action fails
    # and has no load balancer; tolerated, it gets one with 503 rules.
    FlagRun({"--tolerate-non-existent-backend-service": "true",
             "--tolerate-non-existent-backend-action": "true"}, ("f-missing",)),
    # f-svc's own tag, under --default-tags' team=a since the run above, wins again.
    FlagRun({"--feature-gates": "EnableDefaultTagsLowPriority=true"}, ("f-svc",)),
    FlagRun({"--default-ssl-policy": POLICY}, ("f-svc", "f-ing")),
    # Discovery keeps to the allowed CA's certificate, passing over the imported one it chose.
    FlagRun({"--allowed-certificate-authority-arns": "{ca}"}, ("f-disc-ing",)),
    # The Secret's certificate imported and served instead of the discovered one.
    FlagRun({"--enable-secret-certificates": "true"}, ("f-secret-ing",)),
    FlagRun({"--default-target-type": "ip"}, ("f-svc", "f-ing")),
    # A Service without a scheme annotation keeps its existing load balancer's scheme
    # (upstream's rule); the default is for new ones.
    FlagRun({"--default-load-balancer-scheme": "internet-facing"}, ("f-ing",)),
    FlagRun({"--external-managed-tags": ""}, ("f-svc", "f-ing")),
    # Mutual TLS left on a listener whose annotation is gone (upstream's legacy keeps it; set
    # by hand before this run): the gate turns it off.
    FlagRun({"--feature-gates": "EnhancedDefaultBehavior=true"}, ("f-ing",)),
    # Refused until now (TCP and UDP on one port, upstream's default): merged, it deploys.
    FlagRun({"--feature-gates": "EnhancedDefaultBehavior=true,EnableTCPUDPListener=true"},
            ("f-tcp-udp",)),
    # Certificate management on with --default-pca-arn: the Ingress asking for a certificate
    # gets one from that CA (the gate was off: it had none); then another CA re-issues it.
    FlagRun({"--feature-gates": "EnhancedDefaultBehavior=true,EnableTCPUDPListener=true,"
                                "EnableCertificateManagement=true",
             "--default-pca-arn": ACM_PCA}, ("f-acm-ing",)),
    FlagRun({"--default-pca-arn": ACM_PCA2}, ("f-acm-ing",)),
    # One rule per group: the TCP_UDP Service's two rules (TCP and UDP 53) split in two groups.
    FlagRun({"--max-rules-per-security-group": "1"}, ("f-tcp-udp",)),
    # Three flags in one restart, each seen through objects only it changes: the managed
    # stacks' bindings (every port), the Ingress with user groups (the backend group added),
    # the binding whose pod has two groups (its rules move).
    FlagRun({"--disable-restricted-sg-rules": "true",
             "--enable-manage-backend-security-group-rules": "true",
             "--service-target-eni-security-group-tags": "team=b"},
            ("f-svc", "f-ing", "f-user-ing", "f-eni")),
    # The grant to `default` (the world's) withdrawn: the binding's CIDR rules go.
    FlagRun({"--targetgroupbinding-networking-unrestricted-namespaces": ""}, ("f-eni",)),
    FlagRun({"--backend-security-group": "{backend2}"}, ("f-svc", "f-ing", "f-user-ing")),
    FlagRun({"--backend-security-group": "", "--enable-backend-security-group": "false"},
            ("f-svc", "f-ing")),
    # One rule per listener: the second member of the two-member group (group.order 2) is left
    # out. Every object of the world stays within the three other quotas' values here.
    FlagRun({"--max-rules-per-listener": "1", "--max-target-groups-per-load-balancer": "99",
             "--max-condition-values-per-rule": "4", "--max-certificates-per-listener": "24"},
            ("f-quota",)),
    FlagRun({"--aws-vpc-id": "{vpc2}"}, ("f-plain", "f-plain-ing")),
    FlagRun({"--aws-region": "eu-west-1", "--aws-vpc-id": "{vpc3}"},
            ("f-plain", "f-plain-ing"), region="eu-west-1"),
    FlagRun({"--cluster-name": "other-cluster"}, ("f-plain", "f-plain-ing"),
            region="eu-west-1"),
    FlagRun({"--ingress-class": "other"}, ("f-legacy-alb", "f-legacy-other"),
            region="eu-west-1"),
    FlagRun({"--load-balancer-class": "example.com/other"}, ("f-plain", "f-lbc-other"),
            region="eu-west-1"),
]
# The first run's values of the flags above that have a default worth changing from.
FIRST_FLAGS = {"--external-managed-tags": "owner",
               "--service-target-eni-security-group-tags": "team=a",
               "--enable-waf": "false", "--enable-wafv2": "false", "--enable-shield": "false",
               "--tolerate-non-existent-backend-service": "false",
               "--tolerate-non-existent-backend-action": "false"}


def _stack_of(name: str) -> str:
    return name if name == "f-quota" else f"default/{name}"  # f-quota: a named group


async def test_flags_that_shape_the_model_changed_while_down(
        world: World, moto_standin: MotoStandIn) -> None:
    await world.nlb_service("f-svc", {"aws-load-balancer-ssl-cert": world.seed.certificate_arn,
                                      "aws-load-balancer-additional-resource-tags": "team=svc"},
                            target_type=None)
    await world.backend("f-ing-be")
    await world.ingress("f-ing", world.fill(HTTPS, "f-ing"), backend="f-ing-be")
    await world.nlb_service("f-plain", target_type="ip")
    await world.backend("f-plain-ing-be")
    await world.ingress("f-plain-ing", {"target-type": "ip"}, backend="f-plain-ing-be")
    await world.backend("f-legacy-alb-be")
    await world.ingress("f-legacy-alb", {"target-type": "ip", LEGACY_CLASS_ANNOTATION: "alb"},
                        backend="f-legacy-alb-be", class_name=None)
    await world.backend("f-legacy-other-be")
    await world.ingress("f-legacy-other", {"target-type": "ip",
                                           LEGACY_CLASS_ANNOTATION: "other"},
                        backend="f-legacy-other-be", class_name=None)
    await world.nlb_service("f-lbc-other", load_balancer_class="example.com/other")
    await world.nlb_service("f-tcp-udp", target_type="ip", ports=[
        {"name": "dns-tcp", "port": 53, "targetPort": 5353, "protocol": "TCP"},
        {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"}])
    await world.ingress("f-missing", {"target-type": "ip"}, paths=[
        ingress_path("/a", "f-missing-svc"), ingress_path("/b", "f-missing-act", USE_ANNOTATION)])
    await world.backend("f-user-ing-be")
    await world.ingress("f-user-ing", {"target-type": "ip",
                                       "security-groups": world.extra["security_group"]},
                        backend="f-user-ing-be")
    await make_web_acls(world)
    for name, notes in (("f-waf", {"waf-acl-id": "{waf_id}"}),
                        ("f-wafv2", {"wafv2-acl-arn": "{web_acl}"}),
                        ("f-shield", {"shield-advanced-protection": "true"})):
        await world.backend(f"{name}-be")
        await world.ingress(name, {"target-type": "ip", **world.fill(notes, name)},
                            backend=f"{name}-be")
    eni_groups = await _two_pod_groups(world, moto_standin, "10.0.5.60")
    await world.backend("f-eni-svc", endpoint_ips=["10.0.5.60"])
    eni_tg = await world.target_group("f-eni-tg")
    await world.binding("f-eni", service="f-eni-svc", arn=eni_tg, extra={"networking": {
        "ingress": [{"from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}],
                     "ports": [{"port": 8080}]}]}})
    backend2 = str((await world.aws.call(
        "ec2", "CreateSecurityGroup", GroupName="backend-by-hand", Description="by hand",
        VpcId=world.seed.vpc_id))["GroupId"])
    vpc2 = await asyncio.to_thread(seed_vpc, moto_standin.url, vpc_cidr="10.1.0.0/16",
                                   region=world.seed.region)
    vpc3 = await asyncio.to_thread(seed_vpc, moto_standin.url, vpc_cidr="10.2.0.0/16",
                                   region="eu-west-1")
    for vpc in (world.seed, vpc3):
        await _share_subnets(world, vpc.region, vpc.vpc_id, "other-cluster")
    ca = await _discoverable_certificates(world, "disc.example.com")
    await world.backend("f-disc-ing-be")
    await world.ingress("f-disc-ing", {"listen-ports": '[{"HTTPS": 443}]'},
                        backend="f-disc-ing-be", tls_hosts=["disc.example.com"])
    await world.create(SECRETS, tls_secret("f-secret-tls", "disc.example.com"))
    await world.backend("f-secret-ing-be")
    await world.ingress("f-secret-ing", {"listen-ports": '[{"HTTPS": 443}]'},
                        backend="f-secret-ing-be", tls_hosts=["disc.example.com"])
    ing = await world.get(INGRESSES, "f-secret-ing")
    ing["spec"]["tls"][0]["secretName"] = "f-secret-tls"
    await world.client.update(INGRESSES, ing)
    await world.backend("f-quota-be")
    for name, order in (("f-quota-a", "1"), ("f-quota-b", "2")):
        await world.ingress(name, {"target-type": "ip", "group.name": "f-quota",
                                   "group.order": order},
                            paths=[ingress_path(f"/{name}", "f-quota-be")])
    await world.backend("f-acm-ing-be")
    await world.ingress("f-acm-ing", {"listen-ports": '[{"HTTPS": 443}]',
                                      "create-acm-cert": "true"},
                        backend="f-acm-ing-be", host="f-acm.acm.example.com")
    placeholders = {"{vpc2}": vpc2.vpc_id, "{vpc3}": vpc3.vpc_id, "{backend2}": backend2,
                    "{ca}": ca}

    flags = dict(FIRST_FLAGS)
    region = world.seed.region
    all_regions = [world.seed.region, "eu-west-1"]
    names = ["f-svc", "f-ing", "f-plain", "f-plain-ing", "f-legacy-alb", "f-legacy-other",
             "f-lbc-other", "f-user-ing", "f-eni", "f-waf", "f-wafv2", "f-shield", "f-missing",
             "f-disc-ing", "f-secret-ing", "f-tcp-udp", "f-acm-ing", "f-quota"]

    async def observe(name: str) -> str:
        if name == "f-eni":
            return repr([sorted(await world.aws.group_rules(g)) for g in eni_groups])
        return await world.snapshot([_stack_of(name)], regions=all_regions)

    process = await _start(world, flags)
    try:
        await eventually(lambda: _has_checkpoints(world, ["f-svc", "f-ing", "f-plain",
                                                           "f-plain-ing", "f-legacy-alb",
                                                           "f-user-ing", "f-eni",
                                                           "f-disc-ing", "f-secret-ing",
                                                           "f-quota-a", "f-quota-b"]),
                         timeout=120, interval=0.5, message="first run did not converge")
    finally:
        await process.kill()

    for run in FLAG_RUNS:
        if "--external-managed-tags" in run.flags:
            # Someone else's tag, kept while the key was declared externally managed; now
            # that it no longer is, the deploy removes it.
            await _tag_by_hand(world, ["default/f-svc", "default/f-ing"])
        if "--feature-gates" in run.flags:
            await _mutual_tls_by_hand(world, "default/f-ing")
        before = {n: await observe(n) for n in names}
        flags.update({k: placeholders.get(v, v) for k, v in run.flags.items()})
        region = run.region or region
        process = await _start(world, flags)
        try:
            async def changed(run: FlagRun = run, before: dict[str, str] = before
                              ) -> list[str]:
                return [n for n in run.objects if await observe(n) == before[n]]

            async def done(changed: Any = changed) -> bool:
                return not await changed()

            try:
                await eventually(done, timeout=120, interval=0.5)
            except AssertionError:
                raise AssertionError(f"{run.flags}: not reached AWS for "
                                     f"{await changed()}") from None
        finally:
            await process.kill()


async def _discoverable_certificates(world: World, host: str) -> str:
    """A private CA's certificate for `host` and an imported one whose ARN sorts first, so
    that discovery picks the imported one until only the CA's are allowed; the CA's ARN."""
    ca = str((await world.aws.call(
        "acm-pca", "CreateCertificateAuthority", CertificateAuthorityType="ROOT",
        CertificateAuthorityConfiguration={
            "KeyAlgorithm": "RSA_2048", "SigningAlgorithm": "SHA256WITHRSA",
            "Subject": {"CommonName": "allowed"}}))["CertificateAuthorityArn"])
    private = str((await world.aws.call("acm", "RequestCertificate", DomainName=host,
                                        CertificateAuthorityArn=ca))["CertificateArn"])
    issuer = issue_ca("by-hand", now=time.time(), validity=30 * 86400.0)
    while True:
        pair = issue_serving(issuer, [host], now=time.time(), validity=30 * 86400.0)
        imported = str((await world.aws.call(
            "acm", "ImportCertificate", Certificate=pair.cert_pem, PrivateKey=pair.key_pem,
            CertificateChain=issuer.cert_pem))["CertificateArn"])
        if imported < private:
            return ca
        await world.aws.call("acm", "DeleteCertificate", CertificateArn=imported)


def tls_secret(name: str, host: str) -> dict[str, Any]:
    """A kubernetes.io/tls Secret with a fresh certificate for `host` and its key."""
    ca = issue_ca("team-ca", now=time.time(), validity=30 * 86400.0)
    pair = issue_serving(ca, [host], now=time.time(), validity=30 * 86400.0)
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name},
            "data": {"tls.crt": base64.b64encode(pair.cert_pem + ca.cert_pem).decode(),
                     "tls.key": base64.b64encode(pair.key_pem).decode()}}


async def _two_pod_groups(world: World, moto: MotoStandIn, ip: str) -> list[str]:
    """A pod interface in two groups tagged for the cluster, told apart by a `team` tag."""
    groups = []
    for team in ("a", "b"):
        groups.append(str((await world.aws.call(
            "ec2", "CreateSecurityGroup", GroupName=f"pods-{team}", Description="pods",
            VpcId=world.seed.vpc_id, TagSpecifications=[{
                "ResourceType": "security-group", "Tags": [
                    {"Key": f"kubernetes.io/cluster/{world.seed.cluster_name}",
                     "Value": "owned"}, {"Key": "team", "Value": team}]}]))["GroupId"]))
    await asyncio.to_thread(create_pod_eni, moto.url, world.seed, ip,
                            security_group_ids=groups)
    return groups


async def _start(world: World, flags: dict[str, str]) -> ControllerRun:
    args = [x for k, v in flags.items() for x in (f"{k}={v}",)]
    # Through the fault proxy: it answers WAF Classic Regional, which moto has not.
    return await world.run(*args, through_proxy=True)


async def _has_checkpoints(world: World, names: list[str]) -> bool:
    for name in names:
        res = (SERVICES if name in ("f-svc", "f-plain")
               else TARGETGROUPBINDINGS if name == "f-eni" else INGRESSES)
        if not await world.checkpoint(res, name):
            return False
    return True


async def _share_subnets(world: World, region: str, vpc_id: str, cluster: str) -> None:
    subnets = await world.aws.call("ec2", "DescribeSubnets", region=region,
                                   Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    await world.aws.call("ec2", "CreateTags", region=region,
                         Resources=[s["SubnetId"] for s in subnets["Subnets"]],
                         Tags=[{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "shared"}])


async def _mutual_tls_by_hand(world: World, stack: str) -> None:
    """Mutual TLS on the stack's HTTPS listener, as a removed annotation leaves it."""
    lbs = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()]
    [arn] = [a for a, t in (await world.aws.tags(lbs)).items() if stack_of(t) == stack]
    listener = (await world.aws.listeners(arn))[443]
    await world.aws.elbv2("ModifyListener", ListenerArn=listener["ListenerArn"],
                          MutualAuthentication={"Mode": "passthrough"})


async def _tag_by_hand(world: World, stacks: list[str]) -> None:
    """A tag someone else manages (--external-managed-tags owner keeps it)."""
    lbs = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()]
    mine = [a for a, t in (await world.aws.tags(lbs)).items() if stack_of(t) in stacks]
    await world.aws.elbv2("AddTags", ResourceArns=mine, Tags=[{"Key": "owner", "Value": "someone"}])
