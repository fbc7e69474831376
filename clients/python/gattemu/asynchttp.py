"""The little of HTTP/1.1 the async event stream needs, on an `asyncio.StreamReader`: the status line and headers,
then the body (chunked, by length, or to the end) as lines. Bounded: at most 100 headers of 8 KiB, lines of
`MAX_LINE` bytes; chunk sizes are read in pieces as bytes arrive, never allocated as the header claims."""
from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, Callable, Optional

from .errors import ConnectionFailed, ProtocolError
from .events import MAX_LINE

_MAX_HEADERS = 100
_MAX_HEADER_LINE = 8192
_PIECE = 65536


class Deadline(Exception):
    """The caller's deadline (`wait_for`'s timeout) passed while reading."""


class AsyncHTTPReader:
    def __init__(self, reader: asyncio.StreamReader, remaining: Callable[[], float], deadline: Optional[float]):
        self.reader = reader
        self.remaining = remaining
        self.deadline = deadline

    async def _timed(self, awaitable):
        try:
            return await asyncio.wait_for(awaitable, self.remaining())
        except asyncio.TimeoutError:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise Deadline() from None
            raise ConnectionFailed("event stream: no data in time") from None
        except (asyncio.LimitOverrunError, ValueError):
            raise ProtocolError(f"event stream: a line over {MAX_LINE} bytes") from None
        except asyncio.IncompleteReadError:
            raise ConnectionFailed("event stream: the connection closed mid-answer") from None
        except OSError as error:
            raise ConnectionFailed(f"event stream: {error}") from error

    async def _line(self, limit: int) -> bytes:
        line = await self._timed(self.reader.readline())
        if len(line) > limit:
            raise ProtocolError(f"event stream: a line over {limit} bytes")
        return line

    async def head(self) -> tuple[int, bool, Optional[int]]:
        """(status, chunked?, content length or None)."""
        status_line = await self._line(_MAX_HEADER_LINE)
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"event stream: not an HTTP answer: {status_line[:80]!r}")
        chunked, length = False, None
        for _ in range(_MAX_HEADERS + 1):
            line = await self._line(_MAX_HEADER_LINE)
            if line in (b"\r\n", b"\n", b""):
                return int(parts[1]), chunked, length
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"transfer-encoding":
                chunked = value.endswith(b"chunked")
            elif name == b"content-length":
                if not value.isdigit():
                    raise ProtocolError("event stream: bad Content-Length")
                length = int(value)
        raise ProtocolError(f"event stream: more than {_MAX_HEADERS} headers")

    async def body(self, chunked: bool, length: Optional[int], limit: int) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; more than `limit` in all is a `ProtocolError`."""
        total = 0
        async for piece in self._pieces(chunked, length):
            total += len(piece)
            if total > limit:
                raise ProtocolError(f"event stream: answer over {limit} bytes")
            yield piece

    async def _pieces(self, chunked: bool, length: Optional[int]) -> AsyncIterator[bytes]:
        if not chunked:
            left = length
            while left is None or left > 0:
                piece = await self._timed(self.reader.read(_PIECE if left is None else min(_PIECE, left)))
                if not piece:
                    return
                if left is not None:
                    left -= len(piece)
                yield piece
            return
        while True:
            size_line = (await self._line(_MAX_HEADER_LINE)).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise ProtocolError(f"event stream: bad chunk size {size_line[:20]!r}") from None
            if size == 0:
                return
            while size > 0:
                piece = await self._timed(self.reader.read(min(_PIECE, size)))
                if not piece:
                    raise ConnectionFailed("event stream: the connection closed mid-chunk")
                size -= len(piece)
                yield piece
            await self._line(_MAX_HEADER_LINE)  # the CRLF after the chunk

    async def lines(self, chunked: bool, length: Optional[int]) -> AsyncIterator[bytes]:
        """The body as lines (with their endings); a last line without one is yielded too."""
        buffer = bytearray()
        async for piece in self._pieces(chunked, length):
            buffer += piece
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    break
                yield bytes(buffer[:end + 1])
                del buffer[:end + 1]
            if len(buffer) > MAX_LINE:
                raise ProtocolError(f"event stream: a line over {MAX_LINE} bytes")
        if buffer:
            yield bytes(buffer)
