"""Typed API errors. Each carries the HTTP code and the message of the server's Status body."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answer from the Kubernetes API server (or a failure to reach it)."""

    code: int = 0

    def __init__(self, message: str, *, code: int | None = None, reason: str = "",
                 status: dict[str, Any] | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.reason = reason
        self.status = status or {}
        self.retry_after = retry_after


class BadRequest(ApiError):
    code = 400


class Unauthorized(ApiError):
    code = 401


class Forbidden(ApiError):
    code = 403


class NotFound(ApiError):
    code = 404


class MethodNotAllowed(ApiError):
    code = 405


class Conflict(ApiError):
    """409 with reason Conflict: a stale resourceVersion (optimistic concurrency)."""

    code = 409


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: create of a name that is taken."""


class Gone(ApiError):
    """410: the requested resourceVersion is older than the server's history."""

    code = 410


class Invalid(ApiError):
    code = 422


class TooManyRequests(ApiError):
    code = 429


class ServerError(ApiError):
    """5xx, or the server could not be reached (code 0)."""

    code = 500


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 410: Gone, 422: Invalid, 429: TooManyRequests,
}


def error_from_status(code: int, status: dict[str, Any] | None,
                      retry_after: float | None = None) -> ApiError:
    """Map an HTTP code and its Status body to the matching exception."""
    status = status or {}
    reason = str(status.get("reason", ""))
    message = str(status.get("message") or f"HTTP {code}")
    cls: type[ApiError]
    if code == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif code in _BY_CODE:
        cls = _BY_CODE[code]
    elif code >= 500 or code == 0:
        cls = ServerError
    else:
        cls = ApiError
    return cls(message, code=code, reason=reason, status=status, retry_after=retry_after)
