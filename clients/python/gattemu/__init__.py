"""gattemu's Python client: the control API of an emulated BLE peripheral (`Client`), its event stream and
`wait_for`, and a pytest plugin (`gattemu.pytest_plugin`, registered as `pytest11` entry point `gattemu`)."""
from .client import Client, Response
from .errors import (ApiError, BadRequest, Conflict, ConnectionFailed, Forbidden, GattemuError, MethodNotAllowed,
                     MisdirectedRequest, NotFound, PayloadTooLarge, ProtocolError, ServerError, TokenError, Unauthorized,
                     Unavailable, UnsupportedMediaType, WaitTimeout)
from .events import Event, Match, match
from .token import find_token, read_token_file, token_path

__all__ = [
    "ApiError", "BadRequest", "Client", "Conflict", "ConnectionFailed", "Event", "Forbidden", "GattemuError", "Match",
    "MethodNotAllowed", "MisdirectedRequest", "NotFound", "PayloadTooLarge", "ProtocolError", "Response", "ServerError",
    "TokenError", "Unauthorized", "Unavailable", "UnsupportedMediaType", "WaitTimeout", "find_token", "match",
    "read_token_file", "token_path",
]
