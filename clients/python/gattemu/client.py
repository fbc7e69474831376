"""`Client`: gattemu's control API (docs/control.md) over HTTP/1.1 with the standard library. One method per
operation of the OpenAPI document (`operations.OPERATIONS`), each returning the answer's JSON and raising an
`ApiError` subclass with the API's error body for a 4xx/5xx; the event stream as a sync and an async iterator;
`wait_for` an event matching a predicate."""
from __future__ import annotations

import asyncio
import contextlib
import copy
import http.client
import ipaddress
import json
import os
import socket
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterator, Mapping, Optional, Union

from .asynchttp import AsyncHTTPReader
from .errors import ConnectionFailed, NotFound, ProtocolError, Unavailable, WaitTimeout, api_error
from .asynchttp import Deadline as _Deadline
from .events import MAX_LINE, Event, SSEParser, describe_predicate
from .operations import OPERATIONS, Operation
from .token import find_token, read_token_file, token_from_environment

DEFAULT_URL = "http://127.0.0.1:8765"
MAX_ANSWER = 64 * 1024 * 1024
"""Largest answer the client reads (the status of a big GATT table or 10,000 events is a few MiB)."""
STREAM_READ_TIMEOUT = 60.0
"""The event stream writes a keep-alive comment after 15 s without events; this long without anything is an error."""
LAST_EVENTS = 10
"""How many of the last events a `WaitTimeout` names."""

Body = Union[dict, list, bytes, str, None]


def operation(operation_id: str) -> Callable:
    """Marks a `Client` method as the client of one operation of the OpenAPI document."""

    def mark(method: Callable) -> Callable:
        method.operation = OPERATIONS[operation_id]
        return method

    return mark


def helper(method: Callable) -> Callable:
    """Marks a public `Client` method that sends no request of its own (or only through operation methods)."""
    method.helper = True
    return method


@dataclass
class Response:
    """A raw answer (`Client.raw`): status, headers (lower-case names) and body bytes."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"{}")
        except ValueError:
            raise ProtocolError(f"answer {self.status} is not JSON: {self.body[:120]!r}") from None
        except RecursionError:  # nested deeper than Python's parser goes: no answer gattemu gives
            raise ProtocolError(f"answer {self.status} is JSON nested too deep to read") from None


# The event stream is resumed this long after the server ended it, twice as long each time it ended again with no
# event in between (a server that closes at once is not asked 20 times a second for ever), at most MAX_RECONNECT_PAUSE.
RECONNECT_PAUSE = 0.05
MAX_RECONNECT_PAUSE = 5.0


def _value_body(data: bytes | None, hex: str | None, utf8: str | None, base64: str | None) -> dict:
    given = [(k, v) for k, v in (("data", data), ("hex", hex), ("utf8", utf8), ("base64", base64)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of data (bytes), hex, utf8, base64")
    key, value = given[0]
    if key == "data":
        return {"hex": bytes(value).hex()}
    return {key: value}


def _error(status: int, content: bytes, operation: str) -> Exception:
    """The `ApiError` for an error answer: its JSON body, or its text when it is not JSON (a proxy's page)."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):
        body = content.decode("utf-8", "replace")
    return api_error(status, body, operation)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Client:
    """The control API of one `gattemu run` (or `gattemu-control-fixture`).

    `url`: `http://HOST[:PORT]` (default `$GATTEMU_CONTROL` or `http://127.0.0.1:8765`). The token, first found
    first: `token`, `token_file`, `$GATTEMU_CONTROL_TOKEN`, `$GATTEMU_TOKEN`, then, for a loopback URL, the file
    `gattemu run` made for the port (as `gattemu ctl` finds it). `token=""` sends none. `timeout`: seconds per
    request. Methods block; from asyncio, call them with `asyncio.to_thread` (the event stream has async forms).
    """

    def __init__(self, url: str | None = None, token: str | None = None, *, token_file: str | os.PathLike | None = None,
                 timeout: float = 10.0, environ: Mapping[str, str] | None = None, device: str | None = None):
        environ = os.environ if environ is None else environ
        self.url = (url or environ.get("GATTEMU_CONTROL") or DEFAULT_URL).rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/") or parts.query:
            raise ValueError(f"control URL must be http://HOST[:PORT], not {self.url!r}")
        self.host = parts.hostname
        try:
            self.port = parts.port or 80
        except ValueError:
            raise ValueError(f"control URL has a bad port: {self.url!r}") from None
        self.timeout = timeout
        if token is None and token_file is not None:
            token = read_token_file(token_file)
        if token is None:
            token = token_from_environment(environ)
        if token is None and _is_loopback(self.host):
            token = find_token(self.port, environ=environ)
        self.token = token or None
        if device is not None and not device:
            raise ValueError("device must not be empty")
        self.device = device

    @helper
    def for_device(self, device: str) -> "Client":
        """A client of one device of a rig (`GET /v1/devices` lists them): every operation about a device goes to
        `/v1/devices/DEVICE/…`, with this client's URL, token and timeout."""
        other = copy.copy(self)
        if not device:
            raise ValueError("device must not be empty")
        other.device = device
        return other

    def _scoped(self, op: Operation, values: dict[str, Any]) -> Operation:
        """`op` on this client's device (its `…OfDevice` twin, the device among the values), or `op` itself."""
        twin = OPERATIONS.get(op.id + "OfDevice") if self.device else None
        if twin is None:
            return op
        values["device"] = self.device
        return twin

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # -- transport ------------------------------------------------------------------------------------------------

    def _headers(self, body: bytes | None, headers: Mapping[str, str] | None) -> dict[str, str]:
        result = {"Accept": "application/json"}
        if self.token:
            result["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            result["Content-Type"] = "application/json"
        result.update(headers or {})
        return result

    @staticmethod
    def _encode(body: Body) -> bytes | None:
        if body is None or isinstance(body, bytes):
            return body
        if isinstance(body, str):
            return body.encode()
        return json.dumps(body).encode()

    def _open(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
              timeout: float | None) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, socket.socket]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout if timeout is None else timeout)
        try:
            connection.request(method, path, body=body, headers=headers)
            sock = connection.sock
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise ConnectionFailed(f"{method} {self.url}{path}: {error or type(error).__name__}") from error
        return connection, response, sock

    @staticmethod
    def _read_all(response: http.client.HTTPResponse, what: str) -> bytes:
        chunks, size = [], 0
        try:
            while True:
                chunk = response.read(65536)
                if not chunk:
                    return b"".join(chunks)
                size += len(chunk)
                if size > MAX_ANSWER:
                    raise ProtocolError(f"{what}: answer over {MAX_ANSWER} bytes")
                chunks.append(chunk)
        except (OSError, http.client.HTTPException) as error:
            raise ConnectionFailed(f"{what}: {error or type(error).__name__}") from error

    @helper
    def raw(self, method: str, path: str, body: Body = None, headers: Mapping[str, str] | None = None,
            timeout: float | None = None) -> Response:
        """Sends any request (a dict/list body as JSON with `Content-Type: application/json`, bytes as given) and
        returns the answer whatever its status: for tests of the API itself. Prefer the operation methods."""
        data = self._encode(body)
        connection, response, _ = self._open(method, path, data, self._headers(data, headers), timeout)
        try:
            content = self._read_all(response, f"{method} {path}")
            return Response(response.status, {k.lower(): v for k, v in response.getheaders()}, content)
        finally:
            connection.close()

    def _call(self, op: Operation, values: Mapping[str, Any], body: Body = None, query: Mapping[str, Any] | None = None,
              text: bool = False) -> Any:
        values = dict(values)
        path = self._scoped(op, values).url_path(values)
        query = {k: v for k, v in (query or {}).items() if v is not None}
        if query:
            path += "?" + urllib.parse.urlencode(query)
        answer = self.raw(op.method, path, body)
        if answer.status >= 400:
            raise _error(answer.status, answer.body, op.id)
        if text:
            return answer.body.decode("utf-8", "replace")
        return answer.json()

    # -- operations -----------------------------------------------------------------------------------------------

    @operation("listDevices")
    def devices(self) -> dict:
        """`GET /v1/devices`: the devices this gattemu runs (one, or a rig's), their adapters and states."""
        return self._call(OPERATIONS["listDevices"], {})

    @operation("getStatus")
    def status(self) -> dict:
        """`GET /v1/status`: device, advertising, centrals, GATT table, variables, faults, presets, last event."""
        return self._call(OPERATIONS["getStatus"], {})

    @operation("getEvents")
    def events(self, since: int | None = None, limit: int | None = None) -> dict:
        """`GET /v1/events`: `{"events": [...], "last", "latest"}` with `seq > since`; events as `Event`s."""
        page = self._call(OPERATIONS["getEvents"], {}, query={"since": since, "limit": limit})
        page["events"] = [Event(e) for e in page.get("events", []) if isinstance(e, dict)]
        return page

    @operation("notify")
    def notify(self, id: str, data: bytes | None = None, *, hex: str | None = None, utf8: str | None = None,
               base64: str | None = None) -> dict:
        """`POST /v1/characteristics/{id}/notify`: notify every subscriber (faults apply). One of `data`, `hex`,
        `utf8`, `base64`."""
        return self._call(OPERATIONS["notify"], {"id": id}, _value_body(data, hex, utf8, base64))

    @operation("indicate")
    def indicate(self, id: str, data: bytes | None = None, *, hex: str | None = None, utf8: str | None = None,
                 base64: str | None = None) -> dict:
        """`POST /v1/characteristics/{id}/indicate`."""
        return self._call(OPERATIONS["indicate"], {"id": id}, _value_body(data, hex, utf8, base64))

    @operation("setValue")
    def set_value(self, id: str, data: bytes | None = None, *, hex: str | None = None, utf8: str | None = None,
                  base64: str | None = None) -> dict:
        """`PUT /v1/characteristics/{id}/value`: replace the stored value (no notification)."""
        return self._call(OPERATIONS["setValue"], {"id": id}, _value_body(data, hex, utf8, base64))

    @operation("fireTrigger")
    def fire_trigger(self, name: str, arguments: Mapping[str, Union[str, int, float, bool]] | None = None) -> dict:
        """`POST /v1/triggers/{name}`: fire a trigger of the profile (LEAF `touch`), with optional arguments."""
        body = {"arguments": dict(arguments)} if arguments else None
        return self._call(OPERATIONS["fireTrigger"], {"name": name}, body)

    @operation("setVariable")
    def set_variable(self, name: str, value: Union[str, int, bool, bytes]) -> dict:
        """`PUT /v1/variables/{name}`: a string, whole number, boolean, or bytes (sent as `{"hex": ...}`)."""
        if isinstance(value, (bytes, bytearray)):
            value = {"hex": bytes(value).hex()}
        return self._call(OPERATIONS["setVariable"], {"name": name}, {"value": value})

    @operation("listFaults")
    def list_faults(self) -> dict:
        """`GET /v1/faults`: `{"faults": [...]}` with `matched`/`fired` counters."""
        return self._call(OPERATIONS["listFaults"], {})

    @operation("addFaults")
    def add_faults(self, spec: Union[dict, list]) -> dict:
        """`POST /v1/faults`: a fault spec (answer: the fault), a list of them or `{"faults": [...]}` (answer:
        `{"faults": [...]}`); all or nothing."""
        return self._call(OPERATIONS["addFaults"], {}, spec)

    @operation("clearFaults")
    def clear_faults(self) -> dict:
        """`DELETE /v1/faults`: remove every fault."""
        return self._call(OPERATIONS["clearFaults"], {})

    @operation("removeFault")
    def remove_fault(self, id: str) -> dict:
        """`DELETE /v1/faults/{id}`."""
        return self._call(OPERATIONS["removeFault"], {"id": id})

    @operation("disconnectCentral")
    def disconnect(self, address: str) -> dict:
        """`POST /v1/centrals/{address}/disconnect`."""
        return self._call(OPERATIONS["disconnectCentral"], {"address": address})

    @operation("setService")
    def set_service(self, id: str, present: bool) -> dict:
        """`PUT /v1/services/{id}`: add (`True`) or remove a service of the profile; bluetoothd sends Service Changed."""
        return self._call(OPERATIONS["setService"], {"id": id}, {"present": bool(present)})

    @operation("getPairing")
    def pairing(self) -> dict:
        """`GET /v1/pairing`: how the device pairs, the prompt waiting, the passkey displayed."""
        return self._call(OPERATIONS["getPairing"], {})

    @operation("answerPairing")
    def answer_pairing(self, prompt: int, *, passkey: Union[str, int, None] = None, accept: bool | None = None) -> dict:
        """`POST /v1/pairing`: answer prompt `prompt` with exactly one of `passkey` and `accept`."""
        if (passkey is None) == (accept is None):
            raise ValueError("give exactly one of passkey and accept")
        body = {"prompt": prompt, **({"passkey": passkey} if passkey is not None else {"accept": bool(accept)})}
        return self._call(OPERATIONS["answerPairing"], {}, body)

    @operation("listBonds")
    def bonds(self) -> dict:
        """`GET /v1/bonds`: centrals paired with the adapter."""
        return self._call(OPERATIONS["listBonds"], {})

    @operation("forgetBond")
    def forget_bond(self, address: str) -> dict:
        """`DELETE /v1/bonds/{address}`: bluetoothd forgets the central's keys."""
        return self._call(OPERATIONS["forgetBond"], {"address": address})

    @operation("changeAddress")
    def change_address(self, address: str = "random") -> dict:
        """`PUT /v1/adapter/address`: `"random"` (a new resolvable private address) or `"original"`."""
        return self._call(OPERATIONS["changeAddress"], {}, {"address": address})

    @operation("setAdvertisement")
    def set_advertisement(self, variant: str | None) -> dict:
        """`PUT /v1/advertisement`: switch to an advertisement variant (`None`: the base advertisement)."""
        return self._call(OPERATIONS["setAdvertisement"], {}, {"variant": variant})

    @operation("reset")
    def reset(self) -> dict:
        """`POST /v1/reset`: behaviour back to the profile's initial state (connections and faults kept)."""
        return self._call(OPERATIONS["reset"], {})

    @operation("getFirmware")
    def firmware(self) -> dict:
        """`GET /v1/firmware`: a firmware-update target's slots (version, hash, pending, confirmed, active), the upload
        under way (offset of length) and whether it is rebooting; `NotFound` for a profile without `firmware`."""
        return self._call(OPERATIONS["getFirmware"], {})

    @operation("listChannels")
    def channels(self) -> dict:
        """`GET /v1/channels`: the profile's L2CAP channels, the PSM each listens on and the channels open on it
        (number, central, the central's MTU)."""
        return self._call(OPERATIONS["listChannels"], {})

    @operation("sendSDU")
    def send_sdu(self, id: str, data: bytes | None = None, *, hex: str | None = None, utf8: str | None = None,
                 base64: str | None = None) -> dict:
        """`POST /v1/channels/{id}/send`: an SDU on every open channel of the profile's channel `id` (channel faults
        apply); `Conflict` when none is open. One of `data`, `hex`, `utf8`, `base64`."""
        return self._call(OPERATIONS["sendSDU"], {"id": id}, _value_body(data, hex, utf8, base64))

    @operation("relaySnapshot")
    def relay_snapshot(self) -> dict:
        """`POST /v1/relay/snapshot`: `gattemu relay` writes the session so far (its `-o` profile, `--capture` file)."""
        return self._call(OPERATIONS["relaySnapshot"], {})

    @operation("openapi")
    def openapi(self) -> dict:
        """`GET /v1/openapi.json`: the OpenAPI document the server serves."""
        return self._call(OPERATIONS["openapi"], {})

    @operation("dashboard")
    def dashboard(self) -> str:
        """`GET /`: the dashboard page (HTML)."""
        return self._call(OPERATIONS["dashboard"], {}, text=True)

    @operation("dashboardStyle")
    def dashboard_style(self) -> str:
        """`GET /dashboard.css`."""
        return self._call(OPERATIONS["dashboardStyle"], {}, text=True)

    @operation("dashboardScript")
    def dashboard_script(self) -> str:
        """`GET /dashboard.js`."""
        return self._call(OPERATIONS["dashboardScript"], {}, text=True)

    @operation("timelineScript")
    def timeline_script(self) -> str:
        """`GET /timeline.js`."""
        return self._call(OPERATIONS["timelineScript"], {}, text=True)

    # -- the event stream -----------------------------------------------------------------------------------------

    def _stream_request(self, since: int | None, last_event_id: str | None) -> tuple[str, dict[str, str]]:
        values: dict[str, Any] = {}
        op = self._scoped(OPERATIONS["streamEvents"], values)
        path = op.url_path(values) + (f"?since={int(since)}" if since is not None else "")
        headers = self._headers(None, {"Accept": "text/event-stream"})
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        return path, headers

    def _stream(self, since: int | None, last_event_id: str | None, reconnect: bool, deadline: float | None,
                read_timeout: float) -> Iterator[Event]:
        pause = RECONNECT_PAUSE
        while True:
            path, headers = self._stream_request(since, last_event_id)
            connection, response, sock = self._open("GET", path, None, headers, self._remaining(deadline, read_timeout))
            try:
                if response.status != 200:
                    raise _error(response.status, self._read_all(response, "event stream"), "streamEvents")
                parser = SSEParser()
                while True:
                    if sock is not None:
                        sock.settimeout(self._remaining(deadline, read_timeout))
                    try:
                        line = response.readline(MAX_LINE + 1)
                    except socket.timeout:
                        if deadline is not None and time.monotonic() >= deadline:
                            raise _Deadline() from None
                        raise ConnectionFailed(f"event stream: nothing for {read_timeout:g} s") from None
                    except (OSError, http.client.HTTPException) as error:
                        raise ConnectionFailed(f"event stream: {error or type(error).__name__}") from error
                    if not line:
                        break  # the server ended the stream: resume after the last event seen
                    if len(line) > MAX_LINE:
                        raise ProtocolError(f"event stream: a line over {MAX_LINE} bytes")
                    event = parser.feed(line)
                    if event is not None:
                        last_event_id = str(event.seq)
                        pause = RECONNECT_PAUSE
                        yield event
            finally:
                connection.close()
            if not reconnect:
                return
            since = None
            if last_event_id is None:
                last_event_id = "0"
            time.sleep(pause)
            pause = min(pause * 2, MAX_RECONNECT_PAUSE)

    @staticmethod
    def _remaining(deadline: float | None, read_timeout: float) -> float:
        if deadline is None:
            return read_timeout
        return max(0.001, min(read_timeout, deadline - time.monotonic()))

    @operation("streamEvents")
    def stream_events(self, since: int | None = None, last_event_id: str | None = None, *, reconnect: bool = True,
                      read_timeout: float = STREAM_READ_TIMEOUT) -> Iterator[Event]:
        """`GET /v1/events/stream`: the events with `seq > since` (or after `last_event_id`), then each new one as
        it is logged, as `Event`s. When the server ends the stream it reconnects after the last event seen
        (`reconnect=False`: stop there). Close the iterator (or leave the `for` loop) to hang up."""
        return self._stream(since, last_event_id, reconnect, None, read_timeout)

    @operation("streamEvents")
    async def astream_events(self, since: int | None = None, last_event_id: str | None = None, *,
                             reconnect: bool = True, read_timeout: float = STREAM_READ_TIMEOUT) -> AsyncIterator[Event]:
        """`stream_events` as an async iterator (asyncio streams; no thread)."""
        async for event in self._astream(since, last_event_id, reconnect, None, read_timeout):
            yield event

    async def _astream(self, since: int | None, last_event_id: str | None, reconnect: bool, deadline: float | None,
                       read_timeout: float) -> AsyncIterator[Event]:
        pause = RECONNECT_PAUSE
        while True:
            path, headers = self._stream_request(since, last_event_id)
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port, limit=MAX_LINE + 2),
                    self._remaining(deadline, self.timeout))
            except asyncio.TimeoutError:
                raise (_Deadline() if deadline is not None and time.monotonic() >= deadline
                       else ConnectionFailed(f"GET {self.url}{path}: connect timed out")) from None
            except OSError as error:
                raise ConnectionFailed(f"GET {self.url}{path}: {error}") from error
            try:
                head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                host = f"[{self.host}]" if ":" in self.host else self.host
                writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{self.port}\r\n{head}\r\n".encode())
                lines = AsyncHTTPReader(reader, lambda: self._remaining(deadline, read_timeout), deadline)
                status, chunked, length = await lines.head()
                if status != 200:
                    content = b"".join([c async for c in lines.body(chunked, length, MAX_ANSWER)])
                    raise _error(status, content, "streamEvents")
                parser = SSEParser()
                async for line in lines.lines(chunked, length):
                    event = parser.feed(line)
                    if event is not None:
                        last_event_id = str(event.seq)
                        pause = RECONNECT_PAUSE
                        yield event
            finally:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
            if not reconnect:
                return
            since = None
            if last_event_id is None:
                last_event_id = "0"
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_RECONNECT_PAUSE)

    # -- helpers --------------------------------------------------------------------------------------------------

    @helper
    def wait_for(self, predicate: Callable[[Event], bool], timeout: float = 10.0, *, since: int | None = 0,
                 what: str | None = None) -> Event:
        """The first event with `seq > since` (default: every event still kept, so one logged before the call
        counts) for which `predicate` is true, e.g. `gattemu.match("write", characteristic="data")` or a lambda.
        Raises `WaitTimeout` after `timeout` seconds, naming what it waited for (`what`, or the predicate's
        description) and the last events seen."""
        deadline = time.monotonic() + timeout
        seen: deque[Event] = deque(maxlen=LAST_EVENTS)
        stream = self._stream(since, None, True, deadline, STREAM_READ_TIMEOUT)
        try:
            for event in stream:
                seen.append(event)
                if predicate(event):
                    return event
                if time.monotonic() >= deadline:
                    break
        except _Deadline:
            pass
        finally:
            stream.close()
        raise WaitTimeout(describe_predicate(predicate, what), timeout, list(seen))

    @helper
    async def wait_for_async(self, predicate: Callable[[Event], bool], timeout: float = 10.0, *,
                             since: int | None = 0, what: str | None = None) -> Event:
        """`wait_for` for asyncio."""
        deadline = time.monotonic() + timeout
        seen: deque[Event] = deque(maxlen=LAST_EVENTS)
        stream = self._astream(since, None, True, deadline, STREAM_READ_TIMEOUT)
        try:
            async for event in stream:
                seen.append(event)
                if predicate(event):
                    return event
                if time.monotonic() >= deadline:
                    break
        except _Deadline:
            pass
        finally:
            await stream.aclose()
        raise WaitTimeout(describe_predicate(predicate, what), timeout, list(seen))

    @helper
    @contextlib.contextmanager
    def fault(self, spec: Union[dict, list, None] = None, **fields: Any) -> Iterator[dict]:
        """Installs a fault (a spec dict, a list of them, or the spec's fields as keywords: `on="write",
        characteristic="config", error="0x81"`) for the length of a `with` block, then removes it (and every
        other fault the spec added); yields what `add_faults` answered."""
        if spec is None:
            spec = {}
        if fields:
            if not isinstance(spec, dict):
                raise ValueError("keyword fields go with a single spec, not a list")
            spec = {**spec, **fields}
        added = self.add_faults(spec)
        ids = [f["id"] for f in (added.get("faults", [added]) if isinstance(added, dict) else []) if "id" in f]
        try:
            yield added
        finally:
            for fault_id in ids:
                with contextlib.suppress(NotFound):
                    self.remove_fault(fault_id)

    @helper
    def wait_ready(self, timeout: float = 30.0, alive: Callable[[], Optional[str]] | None = None) -> dict:
        """Polls `GET /v1/status` until the device has started (the API answers 503 until then, and refuses
        connections before it listens); returns the status. `alive` returns a reason when whatever runs gattemu
        has gone (then this raises at once)."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            if alive is not None:
                reason = alive()
                if reason:
                    raise ConnectionFailed(reason)
            try:
                return self.status()
            except ConnectionFailed as error:
                last = str(error)
            except Unavailable as error:
                last = str(error)
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"the control API at {self.url} to answer (last: {last})", timeout, [])
            time.sleep(0.1)
