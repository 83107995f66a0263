"""Local stand-ins for AWS, used by the tests and by `aiolbc demo` (the `demo` extra): a moto
server on loopback with a seeded VPC, and a fault-injecting proxy in front of it that also
answers target health as AWS does. Never imports pytest."""

from controller.standins.fault_proxy import (
    AWSFaultProxy,
    Fault,
    OperationClass,
    RequestRecord,
    ServerLimits,
)
from controller.standins.moto_server import AwsSeed, MotoStandIn, seed_vpc, sync_client
from controller.standins.pod_enis import (
    PodEni,
    create_pod_eni,
    create_pod_enis,
    join_node_security_group,
)
from controller.standins.target_health import (
    Health,
    TargetEvent,
    TargetHealth,
    TargetHealthSettings,
)

__all__ = [
    "AWSFaultProxy",
    "AwsSeed",
    "Fault",
    "Health",
    "MotoStandIn",
    "OperationClass",
    "PodEni",
    "RequestRecord",
    "ServerLimits",
    "TargetEvent",
    "TargetHealth",
    "TargetHealthSettings",
    "create_pod_eni",
    "create_pod_enis",
    "join_node_security_group",
    "seed_vpc",
    "sync_client",
]
