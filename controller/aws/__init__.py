"""Everything the controller does with AWS: the shared client pool (one aiobotocore session per
process, one client per (service, region), client-side throttling with upstream's
`--aws-api-throttle` syntax, botocore `standard` retries, upstream's AWS API metrics, the
verification budget), the one caller everything calls through, and the layered read path
(direct <- batching <- snapshot readers)."""

from controller.aws.assumerole import AssumeRoleFailed, Role
from controller.aws.batching import BatchingReader, DescribeBatcher
from controller.aws.budget import VerificationBudget
from controller.aws.caller import AfterMutation, BeforeMutation, CallCounts, Caller, is_mutating
from controller.aws.errors import AWSConfigError, AWSError, SnapshotStale
from controller.aws.metrics import AWSMetrics, metrics_for
from controller.aws.pool import AWSClientPool
from controller.aws.readcache import LookupCache, LookupUnavailable, ReadCache, ReadCacheSettings
from controller.aws.reader import (
    LOAD_BALANCERS_BY_ARN,
    LOAD_BALANCERS_BY_NAME,
    TAGS,
    TARGET_GROUPS_BY_ARN,
    TARGET_GROUPS_BY_NAME,
    Answer,
    DirectReader,
    Query,
    Reader,
    Tagged,
    tag_dict,
)
from controller.aws.settings import AWSSettings, parse_endpoints
from controller.aws.snapshot import Listing, RegionSnapshot, SnapshotReader
from controller.aws.throttle import (
    DEFAULT_THROTTLE,
    ELBV2,
    ThrottleConfig,
    Throttler,
    ThrottleRule,
    parse_throttle,
)

__all__ = [
    "DEFAULT_THROTTLE",
    "ELBV2",
    "LOAD_BALANCERS_BY_ARN",
    "LOAD_BALANCERS_BY_NAME",
    "TAGS",
    "TARGET_GROUPS_BY_ARN",
    "TARGET_GROUPS_BY_NAME",
    "AWSClientPool",
    "AWSConfigError",
    "AWSError",
    "AWSMetrics",
    "AWSSettings",
    "AfterMutation",
    "Answer",
    "AssumeRoleFailed",
    "BatchingReader",
    "BeforeMutation",
    "CallCounts",
    "Caller",
    "DescribeBatcher",
    "DirectReader",
    "Listing",
    "LookupCache",
    "LookupUnavailable",
    "Query",
    "ReadCache",
    "ReadCacheSettings",
    "Reader",
    "RegionSnapshot",
    "Role",
    "SnapshotReader",
    "SnapshotStale",
    "Tagged",
    "ThrottleConfig",
    "ThrottleRule",
    "Throttler",
    "VerificationBudget",
    "is_mutating",
    "metrics_for",
    "parse_endpoints",
    "parse_throttle",
    "tag_dict",
]
