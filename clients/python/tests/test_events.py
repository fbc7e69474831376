"""The event stream as sync and async iterators, `wait_for`, and hostile streams (endless lines, lying chunk
sizes, non-JSON data) ending in clear errors with bounded memory."""
from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

import gattemu
from gattemu import Client, match
from gattemu import client as client_module
from gattemu.events import MAX_LINE, SSEParser


def client_of(server) -> Client:
    return Client(server.url, server.token)


def later(seconds: float, action) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
    thread.start()
    return thread


def test_sse_parser_frames_events_and_skips_comments():
    parser = SSEParser()
    lines = [b": keep-alive\n", b"id: 7\n", b"event: write\n", b'data: {"seq":7,"t":1.5,"event":"write",\n',
             b'data: "value":"0102"}\n', b"\n"]
    results = [parser.feed(line) for line in lines]
    assert results[:-1] == [None] * 5
    event = results[-1]
    assert event.seq == 7 and event.kind == "write" and event.value == b"\x01\x02" and event.stream_id == "7"
    not_an_event = SSEParser()
    assert not_an_event.feed(b"data: [1, 2]\n") is None
    with pytest.raises(gattemu.ProtocolError, match="not an event"):
        not_an_event.feed(b"\n")
    bad = SSEParser()
    bad.feed(b"data: not json\n")
    with pytest.raises(gattemu.ProtocolError, match="not JSON"):
        bad.feed(b"\n")


def test_stream_replays_then_follows_live_events(noke):
    api = client_of(noke)
    stream = api.stream_events(since=2)
    first = [next(stream) for _ in range(3)]
    assert [e.seq for e in first] == [3, 4, 5]
    later(0.3, lambda: api.notify("tx", b"\xab"))
    live = next(e for e in stream if e.kind == "notify")  # after the API's own note
    stream.close()
    assert (live.kind, live.characteristic, live.value) == ("notify", "tx", b"\xab")


def test_stream_resumes_after_the_server_ends_it(fixture_factory):
    server = fixture_factory("--events", "3", "--stream-lifetime-ms", "300")
    api = client_of(server)
    stream = api.stream_events(since=0)
    assert [next(stream).seq for _ in range(3)] == [1, 2, 3]
    later(1.0, lambda: api.notify("tx", b"\x01"))  # after the first stream ended: only a resumed one sees it
    event = next(stream)
    stream.close()
    assert (event.seq, event.kind, event.detail) == (4, "note", "control: notify")
    once = api.stream_events(since=0, reconnect=False)
    assert [e.seq for e in once] == [1, 2, 3, 4, 5]  # ends with the server's stream


def test_async_stream_and_wait_for_async(fixture_factory):
    server = fixture_factory("--events", "3", "--stream-lifetime-ms", "300")
    api = client_of(server)

    async def run():
        seen = []
        async for event in api.astream_events(since=1):
            seen.append(event.seq)
            if len(seen) == 2:
                break
        assert seen == [2, 3]
        asyncio.get_running_loop().call_later(0.8, lambda: threading.Thread(
            target=lambda: api.notify("tx", b"\x42")).start())
        event = await api.wait_for_async(match("notify", characteristic="tx", value=b"\x42"), timeout=10, since=3)
        assert event.value == b"\x42"
        started = time.monotonic()
        with pytest.raises(gattemu.WaitTimeout, match="notify on tx with value 99"):
            await api.wait_for_async(match("notify", characteristic="tx", value="99"), timeout=1.0)
        assert 0.9 < time.monotonic() - started < 5

    asyncio.run(run())


def test_wait_for_returns_the_matching_event(noke):
    api = client_of(noke)
    latest = api.events(limit=1)["latest"]
    later(0.3, lambda: api.notify("tx", b"\x51\x60\x07"))
    event = api.wait_for(match("notify", characteristic="tx", value="516007"), timeout=10, since=latest)
    assert event.seq > latest
    # An event logged before the call counts with the default since=0.
    assert api.wait_for(lambda e: e.kind == "write", timeout=5).seq == 1


def test_wait_for_times_out_naming_what_and_the_last_events(noke):
    api = client_of(noke)
    started = time.monotonic()
    with pytest.raises(gattemu.WaitTimeout) as caught:
        api.wait_for(match("write", characteristic="rx", value=b"\xff"), timeout=1.0)
    elapsed = time.monotonic() - started
    error = caught.value
    assert 0.9 < elapsed < 5
    assert error.what == "write on rx with value ff" and error.timeout == 1.0
    assert [e.seq for e in error.last_events] == [1, 2, 3, 4, 5]
    assert "#1 write rx 51600102 request (AA:BB:CC:DD:EE:01)" in str(error)
    assert isinstance(error, TimeoutError)
    with pytest.raises(gattemu.WaitTimeout, match="the lock to jam"):
        api.wait_for(lambda e: False, timeout=0.3, what="the lock to jam")


class HostileServer:
    """Answers every connection with `head`, then `body` (bytes, or a callable writing to the socket)."""

    def __init__(self, head: bytes, body):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.head, self.body = head, body
        self.sent = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                try:
                    connection.sendall(self.head)
                    if callable(self.body):
                        self.body(self, connection)
                    else:
                        connection.sendall(self.body)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def endless_line(server, connection):
    piece = b"a" * 65536
    connection.sendall(b"data: ")
    while server.sent < 64 * MAX_LINE:
        connection.sendall(piece)
        server.sent += len(piece)


@pytest.mark.parametrize("form", ["sync", "async"])
def test_an_endless_line_is_a_protocol_error_with_bounded_reading(form):
    server = HostileServer(SSE_HEAD + b"\r\n", endless_line)
    api = Client(f"http://127.0.0.1:{server.port}", "t")
    try:
        with pytest.raises(gattemu.ProtocolError, match="over"):
            if form == "sync":
                next(api.stream_events(reconnect=False))
            else:
                asyncio.run(anext_event(api))
        # The client gave up after about MAX_LINE (the rest is what the kernel's and asyncio's buffers held).
        assert server.sent < 32 * MAX_LINE
    finally:
        server.close()


async def anext_event(api: Client):
    async for event in api.astream_events(reconnect=False):
        return event


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_chunk_claiming_terabytes_is_read_as_it_arrives(form):
    body = b"ffffffffff\r\n" + b'data: {"seq":1,"t":0,"event":"note"}\n\n'  # then the server hangs up
    server = HostileServer(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n", body)
    api = Client(f"http://127.0.0.1:{server.port}", "t")
    try:
        with pytest.raises((gattemu.ConnectionFailed, gattemu.ProtocolError)):
            if form == "sync":
                list(api.stream_events(reconnect=False))
            else:
                asyncio.run(collect(api))
    finally:
        server.close()


async def collect(api: Client):
    return [event async for event in api.astream_events(reconnect=False)]


def test_non_json_error_bodies_and_oversized_answers_are_clear_errors(monkeypatch):
    server = HostileServer(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 9\r\nConnection: close\r\n\r\n", b"<html>bad")
    api = Client(f"http://127.0.0.1:{server.port}", "t")
    try:
        with pytest.raises(gattemu.ApiError) as caught:
            api.status()
        assert caught.value.status == 502 and caught.value.message == "<html>bad"
        with pytest.raises(gattemu.ApiError, match="502"):
            next(api.stream_events())
    finally:
        server.close()
    monkeypatch.setattr(client_module, "MAX_ANSWER", 1000)
    server = HostileServer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"{" + b" " * 5000 + b"}")
    try:
        with pytest.raises(gattemu.ProtocolError, match="over 1000 bytes"):
            Client(f"http://127.0.0.1:{server.port}", "t").status()
    finally:
        server.close()


def test_json_nested_deeper_than_python_reads_is_a_protocol_error():
    """A hostile server's answer of JSON nested 100,000 deep: a ProtocolError, not Python's RecursionError."""
    deep = b"[" * 100_000 + b"]" * 100_000
    server = HostileServer(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(deep), deep)
    api = Client(f"http://127.0.0.1:{server.port}", "t")
    try:
        with pytest.raises(gattemu.ProtocolError, match="nested too deep"):
            api.status()
    finally:
        server.close()
    parser = SSEParser()
    assert parser.feed(b"data: " + b"[" * 100_000 + b"\n") is None
    with pytest.raises(gattemu.ProtocolError, match="nested too deep"):
        parser.feed(b"\n")


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_server_that_ends_every_stream_at_once_is_asked_less_and_less_often(form, monkeypatch):
    """Each stream the server ends with no event doubles the pause before the next request (0.05 s, up to 5 s); an
    event sets it back. Before: every 50 ms, for ever."""
    server = HostileServer(SSE_HEAD + b"Content-Length: 0\r\n\r\n", b"")
    api = Client(f"http://127.0.0.1:{server.port}", "t")
    pauses: list[float] = []

    class Enough(Exception):
        pass

    def pause(seconds: float):
        pauses.append(seconds)
        if len(pauses) == 10:
            raise Enough

    async def apause(seconds: float):
        pause(seconds)

    monkeypatch.setattr(client_module.time, "sleep", pause)
    monkeypatch.setattr(client_module.asyncio, "sleep", apause)
    try:
        with pytest.raises(Enough):
            if form == "sync":
                next(api.stream_events())
            else:
                asyncio.run(anext_reconnecting(api))
    finally:
        server.close()
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0], pauses


async def anext_reconnecting(api: Client):
    async for event in api.astream_events():
        return event
