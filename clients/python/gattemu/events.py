"""Events of gattemu's event log (schema `Event`, docs/control.md "Events") and the Server-Sent Events framing of
`GET /v1/events/stream`: `id: SEQ`, `event: KIND`, `data: {event json}`, a blank line; `:` lines are comments."""
from __future__ import annotations

import json
from typing import Any, Callable, Optional

from .errors import ProtocolError

MAX_LINE = 1024 * 1024
"""Longest line of the event stream the client accepts (an event is at most a few KiB: a 512-byte value in hex)."""


class Event(dict):
    """One event: the JSON object as a dict (`seq`, `t`, `event`, and where they apply `central`, `characteristic`,
    `value` (hex), `detail`, `mtu`), with attribute access to the common fields. From the event stream,
    `stream_id` is the stream's `id:` for it (None otherwise)."""

    stream_id: Optional[str] = None

    @property
    def seq(self) -> int:
        return int(self.get("seq", 0))

    @property
    def kind(self) -> str:
        return str(self.get("event", ""))

    @property
    def central(self) -> Optional[str]:
        return self.get("central")

    @property
    def characteristic(self) -> Optional[str]:
        return self.get("characteristic")

    @property
    def detail(self) -> Optional[str]:
        return self.get("detail")

    @property
    def value(self) -> Optional[bytes]:
        """The event's value as bytes (None when it has none)."""
        text = self.get("value")
        if text is None:
            return None
        try:
            return bytes.fromhex(text)
        except (TypeError, ValueError):
            raise ProtocolError(f"event {self.seq}: value is not hex: {str(text)[:80]!r}") from None

    def describe(self) -> str:
        """One short line: `#12 write data 0102 (C0:FF:EE:00:00:01)`."""
        parts = [f"#{self.get('seq', '?')}", self.kind]
        for key in ("characteristic", "value", "detail"):
            if self.get(key) not in (None, ""):
                text = str(self[key])
                parts.append(text if len(text) <= 48 else text[:45] + "...")
        if self.get("central"):
            parts.append(f"({self['central']})")
        return " ".join(parts)


def parse_event(data: str | bytes) -> Event:
    """An event from its JSON text; anything that is not a JSON object with an integer `seq` and a string `event`
    is a `ProtocolError`."""
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise ProtocolError(f"event is not JSON: {error}") from None
    except RecursionError:  # nested deeper than Python's parser goes: a hostile server's, not an event
        raise ProtocolError("event is JSON nested too deep to read") from None
    if not isinstance(value, dict) or not isinstance(value.get("seq"), int) or not isinstance(value.get("event"), str):
        raise ProtocolError(f"not an event: {str(data)[:120]!r}")
    return Event(value)


class SSEParser:
    """Turns the event stream's lines into events. Feed it each line (bytes, with or without its line ending);
    it returns the event a blank line completes, else None. Bounded: an event's data over `MAX_LINE` bytes is a
    `ProtocolError`."""

    def __init__(self) -> None:
        self._data: list[bytes] = []
        self._size = 0
        self.last_id: Optional[str] = None

    def feed(self, line: bytes) -> Optional[Event]:
        line = line.rstrip(b"\r\n")
        if not line:
            if not self._data:
                return None
            data = b"\n".join(self._data)
            self._data, self._size = [], 0
            event = parse_event(data)
            event.stream_id = self.last_id
            return event
        if line.startswith(b":"):
            return None  # a comment: keep-alive
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._size += len(value) + 1
            if self._size > MAX_LINE:
                raise ProtocolError(f"an event of the stream is over {MAX_LINE} bytes")
            self._data.append(value)
        elif field == b"id" and b"\0" not in value:
            self.last_id = value.decode("utf-8", "replace")
        return None  # `event:` repeats the JSON's kind; `retry:` and unknown fields are ignored


class Match:
    """A predicate on events with a description for timeout messages: every given field must be equal (`value` as
    bytes or hex; `detail` as a substring). `match(kind="write", characteristic="data", value=b"\\x01")`."""

    def __init__(self, kind: str | None = None, *, characteristic: str | None = None, central: str | None = None,
                 value: bytes | str | None = None, detail: str | None = None,
                 where: Callable[[Event], bool] | None = None):
        self.kind = kind
        self.characteristic = characteristic
        self.central = central
        self.value = bytes.fromhex(value) if isinstance(value, str) else value
        self.detail = detail
        self.where = where

    def __call__(self, event: Event) -> bool:
        if self.kind is not None and event.kind != self.kind:
            return False
        if self.characteristic is not None and event.characteristic != self.characteristic:
            return False
        if self.central is not None and (event.central or "").upper() != self.central.upper():
            return False
        if self.value is not None and event.get("value") is not None and event.value != self.value:
            return False
        if self.value is not None and event.get("value") is None:
            return False
        if self.detail is not None and self.detail not in (event.detail or ""):
            return False
        return self.where is None or bool(self.where(event))

    @property
    def description(self) -> str:
        parts = [self.kind or "any event"]
        if self.characteristic is not None:
            parts.append(f"on {self.characteristic}")
        if self.value is not None:
            parts.append(f"with value {self.value.hex()}")
        if self.central is not None:
            parts.append(f"from {self.central}")
        if self.detail is not None:
            parts.append(f"with detail containing {self.detail!r}")
        if self.where is not None:
            parts.append(f"where {getattr(self.where, '__name__', 'a condition')}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"match({self.description})"


def match(kind: str | None = None, **fields: Any) -> Match:
    """A `Match`: `match("write", characteristic="data", value="0102")`."""
    return Match(kind, **fields)


def describe_predicate(predicate: Callable[[Event], bool], what: str | None = None) -> str:
    if what:
        return what
    description = getattr(predicate, "description", None)
    if isinstance(description, str):
        return description
    name = getattr(predicate, "__name__", None)
    return name if name and name != "<lambda>" else repr(predicate)
