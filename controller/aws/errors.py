"""Errors of the AWS layer: answers from AWS, bad AWS configuration found at startup, and a
mutation refused because its reads came from the region snapshot."""

from __future__ import annotations

from typing import Any

# Codes AWS uses for request-rate throttling across the services we call.
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
    "TooManyRequestsException", "RequestThrottled", "RequestThrottledException",
    "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException", "BandwidthLimitExceeded",
})
# What EC2 answers for a security group that is not there (a malformed ID included: one taken
# from a tag or a spec may be).
GROUP_NOT_FOUND_CODES = frozenset({"InvalidGroup.NotFound", "InvalidGroupId.NotFound",
                                   "InvalidGroupId.Malformed"})


class AWSConfigError(ValueError):
    """A bad `--aws-*` setting (throttle rule, endpoint, limit). The message names the bad part
    and is meant to be printed as is, without a traceback."""


class AWSError(Exception):
    """An error answer from an AWS API, after botocore's retries gave up or did not apply.

    `code` is AWS's error code (`LoadBalancerNotFound`, `Throttling`, ...), `status` the HTTP
    status of the last attempt.
    """

    def __init__(self, code: str, message: str, operation: str = "", status: int = 0, *,
                 request_id: str = "", retry_attempts: int = 0) -> None:
        super().__init__(f"{operation}: {code}: {message}" if message else f"{operation}: {code}")
        self.code = code
        self.message = message
        self.operation = operation
        self.status = status
        self.request_id = request_id
        self.retry_attempts = retry_attempts

    @classmethod
    def from_response(cls, response: dict[str, Any], *, operation: str) -> AWSError:
        """Build from a botocore error response (`ClientError.response`)."""
        error = response.get("Error") or {}
        meta = response.get("ResponseMetadata") or {}
        return cls(str(error.get("Code") or "Unknown"), str(error.get("Message") or ""),
                   operation=operation, status=int(meta.get("HTTPStatusCode") or 0),
                   request_id=str(meta.get("RequestId") or ""),
                   retry_attempts=int(meta.get("RetryAttempts") or 0))

    @property
    def is_throttling(self) -> bool:
        return self.code in THROTTLING_CODES

    @property
    def is_group_not_found(self) -> bool:
        return self.code in GROUP_NOT_FOUND_CODES

    @property
    def is_not_found(self) -> bool:
        """AWS spells "not found" per resource type: LoadBalancerNotFound,
        TargetGroupNotFound, InvalidSubnetID.NotFound, ResourceNotFoundException, ..."""
        code = self.code.removesuffix("Exception")
        return code.endswith("NotFound")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.code, self.message, self.operation, self.status,
                           self.request_id, self.retry_attempts))


class SnapshotStale(Exception):
    """A deploy that read from the region snapshot (snapshot.py) was about to change AWS: the
    call is refused before it is sent, and the deployer runs the deploy again on fresh reads."""


def _rebuild(code: str, message: str, operation: str, status: int, request_id: str,
             retry_attempts: int) -> AWSError:
    return AWSError(code, message, operation=operation, status=status, request_id=request_id,
                    retry_attempts=retry_attempts)
