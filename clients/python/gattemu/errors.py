"""Errors of the gattemu client: every answer of the control API that is not a success is an `ApiError` (a
subclass per status) carrying the API's JSON error body (schema `Error`, docs/control.md)."""
from __future__ import annotations

from typing import Any


class GattemuError(Exception):
    """Base class of everything the client raises."""


class ConnectionFailed(GattemuError):
    """The control API could not be reached (nothing listening, connection reset, timed out)."""


class ProtocolError(GattemuError):
    """The server's answer was not what the control API sends (not JSON, too large, a broken event stream)."""


class TokenError(GattemuError):
    """The token file gattemu made cannot be trusted or read (another user's folder, group-readable file, ...)."""


class ApiError(GattemuError):
    """A 4xx/5xx answer. `status` is the HTTP status, `body` the API's error object (`{"error": ..., "status": ...,
    "known": [...], ...}`), `message` its `error` text."""

    def __init__(self, status: int, body: dict[str, Any], operation: str = ""):
        self.status = status
        self.body = body
        self.operation = operation
        self.message = str(body.get("error", "")) if isinstance(body, dict) else ""
        super().__init__(f"{operation + ': ' if operation else ''}{status} {self.message}".rstrip())

    @property
    def known(self) -> list[str]:
        """Valid names the server listed with a 404 (characteristics, triggers, faults, ...)."""
        known = self.body.get("known") if isinstance(self.body, dict) else None
        return [str(k) for k in known] if isinstance(known, list) else []


class BadRequest(ApiError):
    """400: malformed JSON, or a body or parameter that does not match its schema."""


class Unauthorized(ApiError):
    """401: no token or a wrong one."""


class Forbidden(ApiError):
    """403: another local user, or a web origin that may not use the API."""


class NotFound(ApiError):
    """404: unknown characteristic, trigger, variable, fault, central, variant or endpoint (see `known`)."""


class MethodNotAllowed(ApiError):
    """405: the path has no such method."""


class Conflict(ApiError):
    """409: well-formed but not possible with this profile (or a fault id already installed, a stale prompt)."""


class PayloadTooLarge(ApiError):
    """413: body over 1 MiB."""


class UnsupportedMediaType(ApiError):
    """415: a body that is not application/json."""


class MisdirectedRequest(ApiError):
    """421: the Host header does not name the server (see body's `acceptedHosts`)."""


class ServerError(ApiError):
    """500: an internal error; the body's `reference` finds it in gattemu's log."""


class Unavailable(ApiError):
    """503: still starting, bluetoothd refused or is gone, or too many event streams."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed, 409: Conflict,
    413: PayloadTooLarge, 415: UnsupportedMediaType, 421: MisdirectedRequest, 500: ServerError, 503: Unavailable,
}


def api_error(status: int, body: Any, operation: str = "") -> ApiError:
    """The `ApiError` subclass for `status` (plain `ApiError` for others)."""
    if not isinstance(body, dict):
        body = {"error": str(body)[:500], "status": status}
    return _BY_STATUS.get(status, ApiError)(status, body, operation)


class WaitTimeout(GattemuError, TimeoutError):
    """`wait_for` saw no matching event in time. `what` names what it waited for, `last_events` the last events it
    saw (at most 10, oldest first)."""

    def __init__(self, what: str, timeout: float, last_events: list):
        self.what = what
        self.timeout = timeout
        self.last_events = list(last_events)
        seen = "; ".join(_describe(e) for e in self.last_events) if self.last_events else "none"
        super().__init__(f"no event matching {what} within {timeout:g} s; last events seen: {seen}")


def _describe(event: Any) -> str:
    describe = getattr(event, "describe", None)
    return describe() if callable(describe) else repr(event)
