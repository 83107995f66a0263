"""The answers admission gives, worded as kube-apiserver's webhook dispatchers word them.

A webhook that says no is a denial (`ToStatusErr`): its own status, at least 400. A webhook that
cannot be asked (unreachable, timed out, a bad answer) is a call failure, which the webhook's
failurePolicy either ignores or turns into a 500 `Internal error occurred: failed calling
webhook ...`.
"""

from __future__ import annotations

from typing import Any

from runtime.envtest.status import StatusError, bad_request


class CallError(Exception):
    """A webhook could not be asked (the real server's ErrCallingWebhook)."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')
        self.webhook = webhook
        self.reason = reason


def internal_error(message: str) -> StatusError:
    """`apierrors.NewInternalError`."""
    return StatusError(500, f"Internal error occurred: {message}", reason="InternalError",
                       details={"causes": [{"message": message}]})


def denied(webhook: str, result: Any) -> StatusError:
    """A webhook's `allowed: false`: its status passes through, with a code of at least 400 and
    the message prefixed by who denied it."""
    status = dict(result) if isinstance(result, dict) else {}
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    by = f'admission webhook "{webhook}" denied the request'
    message, reason = status.get("message"), status.get("reason")
    if isinstance(message, str) and message:
        text = f"{by}: {message}"
    elif isinstance(reason, str) and reason:
        text = f"{by}: {reason}"
    else:
        text = f"{by} without explanation"
    err = StatusError(code, text)
    outcome = status.get("status")
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1",
                            "metadata": status.get("metadata") or {},
                            "status": outcome if isinstance(outcome, str) and outcome not in (
                                "", "Success") else "Failure",
                            "message": text}
    if isinstance(reason, str) and reason:
        body["reason"] = reason
    if isinstance(status.get("details"), dict):
        body["details"] = status["details"]
    body["code"] = code
    err.body = body
    return err


def dry_run_unsupported(webhook: str) -> StatusError:
    return bad_request(f'admission webhook "{webhook}" does not support dry run')


def modifies_deleted(webhook: str) -> StatusError:
    return internal_error(f'admission webhook "{webhook}" attempted to modify the object, which '
                          "is not supported for this operation")
