"""Local stand-ins for AWS, used by the tests and by `aiolbc demo`: a moto server on loopback
with a seeded VPC, and a fault-injecting proxy in front of it. Never imports pytest."""

from controller.standins.fault_proxy import (
    AWSFaultProxy,
    Fault,
    OperationClass,
    RequestRecord,
    ServerLimits,
)
from controller.standins.moto_server import AwsSeed, MotoStandIn, seed_vpc, sync_client

__all__ = [
    "AWSFaultProxy",
    "AwsSeed",
    "Fault",
    "MotoStandIn",
    "OperationClass",
    "RequestRecord",
    "ServerLimits",
    "seed_vpc",
    "sync_client",
]
