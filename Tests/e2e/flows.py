"""The real app flows of the shipped profiles' devices, as a central performs
them. Shared by scripts/demo (Tests/e2e/demo.py) and the gattemu e2e tests.

Every flow takes a `central` (central.py) and a `say` callable that receives
one transcript line per step (bytes in hex), and returns what it saw, so tests
can assert on it. Flows check nothing beyond what the app itself needs to go
on (e.g. that a notification arrived); the tests make the assertions.

Each run also has `transcript`: the byte transcript of its GATT operations (Step: operation, characteristic
UUID, bytes sent, bytes received or notified, ATT error code), in the order the central performed them, each
notification or indication where it arrived. Two runs against the same device give the same transcript when
neither side draws random bytes: gattemu with `--seed N`, the flow with `seed=N` (only the LEAF flow writes
random bytes of its own; the other flows take `seed` too, for one calling convention). `transcript_diff(a, b)`
says where two transcripts part, e.g. a direct run and one through `gattemu relay`. Flows take `address`: only
the device advertising from it is used (the real device and a relay's mirror advertise the same name and services).
"""
from __future__ import annotations

import asyncio
import random
import secrets
from dataclasses import dataclass, field
from typing import Callable

Say = Callable[[str], None]
NOTIFY_TIMEOUT = 15.0


def hx(b: bytes) -> str:
    return b.hex(" ")


def quiet(_line: str) -> None:
    pass


class Inbox:
    """Notifications/indications of one characteristic, in arrival order."""

    def __init__(self, label: str, say: Say):
        self.label, self.say = label, say
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def __call__(self, value: bytes) -> None:
        self.say(f"<- {self.label} {len(value)} bytes: {hx(value)}")
        self.queue.put_nowait(value)

    async def get(self, timeout: float = NOTIFY_TIMEOUT) -> bytes:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no {self.label} within {timeout}s") from None

    async def expect_none(self, within: float = 1.0) -> None:
        try:
            v = await asyncio.wait_for(self.queue.get(), within)
        except asyncio.TimeoutError:
            return
        raise AssertionError(f"unexpected {self.label}: {hx(v)}")


@dataclass
class Step:
    """One GATT operation of a flow. `op`: read, read-descriptor (`uuid` is then CHARACTERISTIC/DESCRIPTOR), write
    (with response), write-cmd (without), subscribe (`sent` is the CCCD value), notify, indicate; `error` is the
    ATT error code of a refused operation (-1: it failed without one, e.g. a timeout)."""
    op: str
    uuid: str
    sent: bytes = b""
    received: bytes = b""
    error: int | None = None

    def __str__(self) -> str:
        text = f"{self.op} {self.uuid}"
        if self.sent:
            text += f" sent {hx(self.sent)}"
        if self.received:
            text += f" received {hx(self.received)}"
        if self.error is not None:
            text += f" error {self.error:#04x}" if self.error >= 0 else " failed"
        return text


def att_error(error: BaseException) -> int:
    """The ATT error code an operation failed with (Bumble's ATT_Error), -1 when it has none."""
    code = getattr(error, "error_code", None)
    return code if isinstance(code, int) else -1


class Recorder:
    """A central's connection that appends each operation to `transcript` as it is performed (a write before its
    answer arrives, so a notification it causes comes after it whatever the link's timing); everything else is the
    connection's own."""

    def __init__(self, conn, transcript: list[Step]):
        self._conn, self.transcript = conn, transcript

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def _do(self, step: Step, operation):
        self.transcript.append(step)
        try:
            result = await operation
        except Exception as e:
            step.error = att_error(e)
            raise
        if isinstance(result, (bytes, bytearray)):
            step.received = bytes(result)
        return result

    async def read(self, uuid: str) -> bytes:
        return await self._do(Step("read", uuid), self._conn.read(uuid))

    async def read_descriptor(self, uuid: str, descriptor: str) -> bytes:
        return await self._do(Step("read-descriptor", f"{uuid}/{descriptor}"), self._conn.read_descriptor(uuid, descriptor))

    async def write(self, uuid: str, data: bytes, response: bool = True) -> None:
        step = Step("write" if response else "write-cmd", uuid, sent=bytes(data))
        await self._do(step, self._conn.write(uuid, data, response=response))

    async def subscribe(self, uuid: str, callback: Callable[[bytes], None], indicate: bool = False) -> None:
        kind = "indicate" if indicate else "notify"

        def received(value: bytes) -> None:
            self.transcript.append(Step(kind, uuid, received=bytes(value)))
            callback(value)

        step = Step("subscribe", uuid, sent=b"\x02\x00" if indicate else b"\x01\x00")
        await self._do(step, self._conn.subscribe(uuid, received, indicate=indicate))


def transcript_diff(a: list[Step], b: list[Step], names: tuple[str, str] = ("first", "second")) -> str | None:
    """None when the transcripts are byte-identical, else where they first part (step number, both steps, and the
    step before it for context)."""
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            before = f"\n  after step {index}: {a[index - 1]}" if index else ""
            return f"step {index + 1} differs:{before}\n  {names[0]}: {x}\n  {names[1]}: {y}"
    if len(a) != len(b):
        longer, name = (a, names[0]) if len(a) > len(b) else (b, names[1])
        return (f"{names[0]} has {len(a)} steps, {names[1]} {len(b)}; {name} goes on with step {min(len(a), len(b)) + 1}: "
                f"{longer[min(len(a), len(b))]}")
    return None


def central_bytes(seed: int | None):
    """n -> n bytes the central draws: from `seed` when given (the same every run), else from the system's CSPRNG."""
    if seed is None:
        return secrets.token_bytes
    return random.Random(seed).randbytes


def adv_line(adv) -> str:
    mfr = " ".join(f"{k:#06x}:{hx(v)}" for k, v in adv.manufacturer_data.items()) or "-"
    sdata = " ".join(f"{k}:{hx(v)}" for k, v in getattr(adv, "service_data", {}).items())
    return (f"found {adv.name!r} at {adv.address}, services {', '.join(adv.service_uuids) or '-'}, "
            f"manufacturer data {mfr}" + (f", service data {sdata}" if sdata else ""))


# ---------------------------------------------------------------------- Noke
NOKE_SERVICE = "1bc50001-0200-d29e-e511-446c609db825"
NOKE_RX = "1bc50002-0200-d29e-e511-446c609db825"
NOKE_TX = "1bc50003-0200-d29e-e511-446c609db825"
NOKE_SESSION = "1bc50004-0200-d29e-e511-446c609db825"
# A plain unlock command as the Noke server returns it (4-byte header + one AES block).
NOKE_UNLOCK = bytes.fromhex("0000c20081e628151d34af9c8878e4efbb84311d")


@dataclass
class NokeRun:
    adv: object = None
    session: bytes = b""
    responses: list[bytes] = field(default_factory=list)
    mtu: int = 0
    transcript: list[Step] = field(default_factory=list)


async def noke_flow(central, say: Say = print, command: bytes = NOKE_UNLOCK,
                    disconnect: bool = True, mtu: int = 517, seed: int | None = None,
                    address: str | None = None) -> NokeRun:
    """Android order: scan for NOKE* with the lock service, connect, read the
    session, enable TX notifications, write one 20-byte command to RX, wait for
    the 0x51 answer (0x50 server packets before it are collected too)."""
    run = NokeRun()
    say(f"scan for name NOKE* with service {NOKE_SERVICE}")
    run.adv = await central.find(name_prefix="NOKE", service_uuid=NOKE_SERVICE, address=address, timeout=60)
    say(adv_line(run.adv))
    conn = Recorder(await central.connect(run.adv.address, mtu=mtu), run.transcript)
    run.mtu = conn.mtu
    say(f"connected, MTU {conn.mtu}")
    try:
        run.session = await conn.read(NOKE_SESSION)
        say(f"read session ...0004: {len(run.session)} bytes: {hx(run.session)}")
        if len(run.session) >= 4:
            say(f"  battery {int.from_bytes(run.session[2:4], 'little')} mV")
        tx = Inbox("notification TX ...0003", say)
        await conn.subscribe(NOKE_TX, tx)
        say("enabled notifications on TX ...0003")
        say(f"-> write RX ...0002 {len(command)} bytes: {hx(command)}")
        await conn.write(NOKE_RX, command, response=True)
        while True:
            v = await tx.get()
            run.responses.append(v)
            if v[:1] != b"\x50":
                break
        result = run.responses[-1]
        meaning = {0x60: "success", 0x61: "invalid key", 0x62: "invalid command",
                   0x63: "invalid permission", 0x64: "shutdown", 0x68: "failed to lock",
                   0x69: "failed to unlock", 0x6A: "failed to unshackle"}
        if result[:1] == b"\x51" and len(result) > 1:
            say(f"  lock answered 0x{result[1]:02x} ({meaning.get(result[1], 'unknown')})")
    finally:
        if disconnect:
            await conn.disconnect()
            say("disconnected")
    if not disconnect:
        run.conn = conn
    return run


# ------------------------------------------------------------------ BLEProof
BLEPROOF_SERVICE = "000018aa-0000-1000-8000-00805f9b34fb"
BLEPROOF_INFO = "00002bb0-0000-1000-8000-00805f9b34fb"
BLEPROOF_STATUS = "00002bb1-0000-1000-8000-00805f9b34fb"
BLEPROOF_CONFIG = "00002bb2-0000-1000-8000-00805f9b34fb"


def bleproof_config(password: str = "1") -> bytes:
    return ('<{"thingName":"Daikin_d813997f4904","action":"bleconfig","ssid":"HUAWEI-1CAFB0",'
            f'"password":"{password}","setkey":"cfe18ee376b5fb4b14245ad92f167787"}}>').encode()


BLEPROOF_OK = b'<{"action":"bleconfig","result":"ok"}>'
BLEPROOF_NG = b'<{"action":"bleconfig","result":"ng"}>'


@dataclass
class BLEProofRun:
    adv: object = None
    info: bytes = b""
    indications: list[bytes] = field(default_factory=list)
    mtu: int = 0
    transcript: list[Step] = field(default_factory=list)


async def bleproof_flow(central, say: Say = print, writes: list[bytes] | None = None, mtu: int = 517,
                        seed: int | None = None, address: str | None = None) -> BLEProofRun:
    """Scan for BLEProof with service 18AA, read 2BB0, subscribe (indicate) to
    2BB1, write each config (default: the 140-byte password "1" JSON) to 2BB2
    with response and wait for its indication."""
    run = BLEProofRun()
    writes = writes if writes is not None else [bleproof_config("1")]
    say(f"scan for name BLEProof with service {BLEPROOF_SERVICE}")
    run.adv = await central.find(name="BLEProof", service_uuid=BLEPROOF_SERVICE, address=address, timeout=60)
    say(adv_line(run.adv))
    conn = Recorder(await central.connect(run.adv.address, mtu=mtu), run.transcript)
    run.mtu = conn.mtu
    say(f"connected, MTU {conn.mtu}")
    try:
        run.info = await conn.read(BLEPROOF_INFO)
        say(f"read 2BB0: {run.info!r}")
        status = Inbox("indication 2BB1", say)
        await conn.subscribe(BLEPROOF_STATUS, status, indicate=True)
        say("subscribed (indicate) to 2BB1")
        for w in writes:
            say(f"-> write 2BB2 with response, {len(w)} bytes: {w.decode(errors='replace')}")
            await conn.write(BLEPROOF_CONFIG, w, response=True)
            v = await status.get()
            say(f"  = {v.decode(errors='replace')}")
            run.indications.append(v)
    finally:
        await conn.disconnect()
        say("disconnected")
    return run


# ---------------------------------------------------------------------- LEAF
# The public UUIDs of profiles/leaf-reader.json (the LEAF SDK's BLE_CRED_SVC_UUID and DATA_TRANSFER_CHRC_UUID,
# notifications through the standard CCCD 2902); the touch service UUID is not public: a placeholder.
LEAF_SERVICE = "3420d81a-af2c-11e5-bf7f-feff819cdc9f"
LEAF_DATA = "ee8732b3-2d52-409b-9084-70ad31f6c790"
LEAF_TOUCH_SERVICE = "00000000-1eaf-4000-8000-000000000003"
LEAF_READER_UID = bytes.fromhex("4C45414652445231")  # "LEAFRDR1", the profile's readerUID
LEAF_ANDROID_MTU = 200  # the MTU the LEAF Android SDK requests after connecting


def leaf_frame(tag: int, seq: int, value: bytes) -> bytes:
    """[0x81 plain][tag][length u16be = 1 + len(value)][sequence][value]"""
    return bytes([0x81, tag]) + (1 + len(value)).to_bytes(2, "big") + bytes([seq & 0xFF]) + value


def leaf_parse(frame: bytes) -> dict:
    return {"start": frame[0], "tag": frame[1], "length": int.from_bytes(frame[2:4], "big"),
            "seq": frame[4], "value": frame[5:]} if len(frame) >= 5 else {"raw": frame}


class LeafFrames(Inbox):
    """The reader's notifications joined into frames by their length field, as the LEAF app joins them: at
    ATT MTU 23 a 21-byte frame arrives as 20 + 1 bytes (the data characteristic `fragment`s)."""

    def __init__(self, label: str, say: Say):
        super().__init__(label, say)
        self.partial = b""

    def __call__(self, value: bytes) -> None:
        self.say(f"<- {self.label} {len(value)} bytes: {hx(value)}")
        self.partial += value
        while len(self.partial) >= 4 and len(self.partial) >= 4 + int.from_bytes(self.partial[2:4], "big"):
            size = 4 + int.from_bytes(self.partial[2:4], "big")
            self.queue.put_nowait(self.partial[:size])
            self.partial = self.partial[size:]
        if self.partial and self.partial[0] not in (0x81, 0xC1):  # not a frame: as it came
            self.queue.put_nowait(self.partial)
            self.partial = b""


async def leaf_write(conn, frames: bytes, say: Say = print) -> None:
    """Writes without response in pieces of ATT MTU - 3 bytes, as a Write Command carries at most that."""
    room = conn.mtu - 3
    for start in range(0, len(frames), room):
        piece = frames[start:start + room]
        if len(frames) > room:
            say(f"   piece {start // room + 1}: {len(piece)} bytes")
        await conn.write(LEAF_DATA, piece, response=False)


@dataclass
class LeafRun:
    adv: object = None
    duid: bytes = b""
    auth: list[bytes] = field(default_factory=list)      # AUTH_RSP, AUTH_REQ from the reader
    auth_result: bytes = b""                               # response (tag 0) to our AUTH_RSP
    certificate: bytes = b""                               # transaction certificate frame
    mtu: int = 0
    transcript: list[Step] = field(default_factory=list)


async def leaf_flow(central, say: Say = print, mtu: int = 517, request_mtu: int = 0,
                    credential_bytes: int = 32, seed: int | None = None, address: str | None = None) -> LeafRun:
    """Find an ETHS* reader by its credential service UUID, subscribe to the data characteristic, send dUID +
    AUTH_REQ in one write, receive AUTH_RSP + AUTH_REQ, send AUTH_RSP, receive
    the response, send a credential payload (`credential_bytes` long), receive the transaction
    certificate (plaintext frames, as profiles/leaf-reader.json scripts it). Writes longer than the ATT
    MTU - 3 go in pieces; the reader's frames are joined by their length field. The dUID and nonces are random,
    or drawn from `seed`."""
    run = LeafRun()
    draw = central_bytes(seed)
    say(f"scan for name ETHS* with service {LEAF_SERVICE} (a service UUID filter, as iOS and Android apps scan)")
    run.adv = await central.find(name_prefix="ETHS", service_uuid=LEAF_SERVICE, address=address, timeout=60)
    say(adv_line(run.adv))
    conn = Recorder(await central.connect(run.adv.address, mtu=mtu), run.transcript)
    if request_mtu:  # an Android app asking for a bigger MTU after connecting (requestMtu)
        say(f"requestMtu({request_mtu}) at MTU {conn.mtu}")
        await conn.request_mtu(request_mtu)
    run.mtu = conn.mtu
    say(f"connected, MTU {conn.mtu}")
    seq = 0
    try:
        data = LeafFrames("notification data", say)
        await conn.subscribe(LEAF_DATA, data)
        say("enabled notifications on data")
        run.duid = draw(8)
        hello = leaf_frame(1, seq, run.duid) + leaf_frame(2, seq + 1, draw(16))
        seq += 2
        say(f"-> write dUID + AUTH_REQ, {len(hello)} bytes: {hx(hello)}")
        await leaf_write(conn, hello, say)
        run.auth = [await data.get(), await data.get()]
        say(f"  reader sent tags {[leaf_parse(f).get('tag') for f in run.auth]} (AUTH_RSP=3, AUTH_REQ=2)")
        auth_rsp = leaf_frame(3, seq, draw(16))
        seq += 1
        say(f"-> write AUTH_RSP, {len(auth_rsp)} bytes: {hx(auth_rsp)}")
        await leaf_write(conn, auth_rsp, say)
        run.auth_result = await data.get()
        say(f"  response code {leaf_parse(run.auth_result).get('value', b'?').hex()} (00 = success)")
        payload = leaf_frame(4, seq, draw(credential_bytes))
        seq += 1
        say(f"-> write credential payload, {len(payload)} bytes: {hx(payload)}")
        await leaf_write(conn, payload, say)
        run.certificate = await data.get()
        say(f"  transaction certificate frame, {len(run.certificate)} bytes")
    finally:
        await conn.disconnect()
        say("disconnected")
    return run


FLOWS = {"noke": ("noke-lock.json", noke_flow), "bleproof": ("bleproof.json", bleproof_flow),
         "leaf": ("leaf-reader.json", leaf_flow)}


# ------------------------------------------------------- Bumble device (fixtures/bumble_device.py)
# A peripheral gattemu did not write (the relay's "real device"); its protocol is described in the fixture.
BUMBLE_SERVICE = "b5a90000-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_BLOB = "b5a90001-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_REQUEST = "b5a90002-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_RESPONSE = "b5a90003-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_COMMAND = "b5a90004-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_STATUS = "b5a90005-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_FAULTY = "b5a90006-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_LOCKED = "b5a90007-3c1e-4f7d-9e52-8d0c6a1f2e47"
BUMBLE_EVENTS = "b5a90008-3c1e-4f7d-9e52-8d0c6a1f2e47"  # notify and indicate: the device sends the kind enabled
USER_DESCRIPTION = "2901"
BUMBLE_MTU = 185  # iOS's MTU: the 300-byte value needs a Read and Read Blobs


@dataclass
class BumbleRun:
    adv: object = None
    blob: bytes = b""
    description: bytes = b""
    responses: list[bytes] = field(default_factory=list)   # RESPONSE notifications, one per request
    statuses: list[bytes] = field(default_factory=list)    # STATUS indications, one per command
    events: list[bytes] = field(default_factory=list)      # EVENTS indications (the app chose them), one per request
    errors: dict[str, int] = field(default_factory=dict)   # characteristic -> ATT error of the refused operations
    locked: bytes = b""
    mtu: int = 0
    transcript: list[Step] = field(default_factory=list)


async def bumble_flow(central, say: Say = print, name: str = "BumbleDev", mtu: int = BUMBLE_MTU,
                      seed: int | None = 0, requests: int = 3, pair: bool | str = False,
                      address: str | None = None) -> BumbleRun:
    """The Bumble device's app: find NAME with BUMBLE_SERVICE, read the 300-byte BLOB and its User Description,
    subscribe to RESPONSE (notify), STATUS (indicate) and EVENTS (which offers both: the app chooses indications,
    and the device sends an event the way the app enabled; a notification would reach no subscriber here), write a
    hello and `requests - 1` more requests to REQUEST (each answered on RESPONSE and with an event), one command to COMMAND without response (answered on STATUS), read FAULTY (refused
    with an application error), read LOCKED and write it (refused). The written payloads come from `seed` (default:
    the same every run; None: random). Errors are the results of FAULTY and LOCKED; any other error ends the flow.
    `pair`: pair first (just works, bonding), as the app of a device started with --secure must; a passkey (six
    digits): pair typing it (KeyboardOnly, MITM), as the app of a device started with --passkey must."""
    run = BumbleRun()
    draw = central_bytes(seed)
    say(f"scan for name {name} with service {BUMBLE_SERVICE}")
    run.adv = await central.find(name=name, service_uuid=BUMBLE_SERVICE, address=address, timeout=60)
    say(adv_line(run.adv))
    conn = Recorder(await central.connect(run.adv.address, mtu=mtu), run.transcript)
    run.mtu = conn.mtu
    say(f"connected, MTU {conn.mtu}")
    if pair:
        try:
            if isinstance(pair, str):
                async def typed() -> int:
                    return int(pair)
                await conn.pair("KeyboardOnly", mitm=True, type_passkey=typed)
            else:
                await conn.pair("NoInputNoOutput", mitm=False)
        except BaseException:
            await conn.disconnect()
            raise
        say("paired (" + ("passkey typed" if isinstance(pair, str) else "just works") + "), link encrypted")

    async def refused(what: str, operation) -> None:
        try:
            value = await operation
        except Exception as e:  # noqa: BLE001 - the ATT error is the result
            run.errors[what] = att_error(e)
            say(f"  {what} refused: error {att_error(e):#04x}")
            return
        raise AssertionError(f"{what} was not refused: {value!r}")

    try:
        run.blob = await conn.read(BUMBLE_BLOB)
        say(f"read BLOB: {len(run.blob)} bytes: {hx(run.blob[:16])} ...")
        run.description = await conn.read_descriptor(BUMBLE_BLOB, USER_DESCRIPTION)
        say(f"read BLOB's User Description: {run.description!r}")
        responses = Inbox("notification RESPONSE", say)
        statuses = Inbox("indication STATUS", say)
        events = Inbox("indication EVENTS", say)
        await conn.subscribe(BUMBLE_RESPONSE, responses)
        await conn.subscribe(BUMBLE_STATUS, statuses, indicate=True)
        await conn.subscribe(BUMBLE_EVENTS, events, indicate=True)
        say("subscribed to RESPONSE (notify), STATUS (indicate) and EVENTS (indicate, of notify and indicate)")
        for index in range(requests):
            request = bytes([0x01 if index == 0 else 0x02]) + draw(4 + 3 * index)
            say(f"-> write REQUEST {len(request)} bytes: {hx(request)}")
            await conn.write(BUMBLE_REQUEST, request, response=True)
            run.responses.append(await responses.get())
            run.events.append(await events.get())
        command = draw(12)
        say(f"-> write COMMAND without response, {len(command)} bytes: {hx(command)}")
        await conn.write(BUMBLE_COMMAND, command, response=False)
        run.statuses.append(await statuses.get())
        await refused("FAULTY read", conn.read(BUMBLE_FAULTY))
        run.locked = await conn.read(BUMBLE_LOCKED)
        say(f"read LOCKED: {run.locked!r}")
        await refused("LOCKED write", conn.write(BUMBLE_LOCKED, b"\x01", response=True))
    finally:
        await conn.disconnect()
        say("disconnected")
    return run
