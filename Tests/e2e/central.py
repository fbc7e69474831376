"""Test central for the gattemu e2e tests: one async API, two stacks.

    central = await open_central()          # backend from GATTEMU_CENTRAL_STACK
    adv = await central.find(name="x", service_uuid=UUID, timeout=30)
    conn = await central.connect(adv.address)   # retries setup, <= 3 attempts
    await conn.read(uuid); await conn.write(uuid, b"..", response=True)
    await conn.subscribe(uuid, callback, indicate=False); conn.mtu
    await conn.disconnect()
    await central.wait_gone(name="x", timeout=30)
    central.stats.first_attempt_rate()
    await central.close()

Backends (env GATTEMU_CENTRAL_STACK):
  bumble (default)  Google Bumble host stack on the central's btvirt controller,
                    taken from the kernel through the HCI user channel
                    (hci-socket:N). The central does not depend on bluetoothd:
                    the peripheral side's bluetoothd may be restarted.
  bluez             bleak on the same bluetoothd that serves the peripheral.

Only connection *setup* is retried (fresh scan + connect + discovery, up to
`attempts` times); operations on an established connection never are.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable

log = logging.getLogger("central")

DEFAULT_STACK = "bumble"


def stack_name() -> str:
    return os.environ.get("GATTEMU_CENTRAL_STACK", DEFAULT_STACK).strip().lower() or DEFAULT_STACK


def norm_uuid(u) -> str:
    s = str(u).lower()
    if len(s) == 4:
        s = f"0000{s}-0000-1000-8000-00805f9b34fb"
    elif len(s) == 8:
        s = f"{s}-0000-1000-8000-00805f9b34fb"
    return s


def bumble_uuid(uuid) -> str:
    """Bumble prints 16- and 32-bit UUIDs as `UUID-16:FFE1`: the full lowercase form."""
    text = str(uuid)
    for prefix in ("UUID-16:", "UUID-32:"):
        if text.startswith(prefix):
            text = text[len(prefix):].split(" ")[0]
    return norm_uuid(text)


def uuid_from_le(raw: bytes) -> str:
    """A 2-, 4- or 16-byte UUID as it is on air (little-endian), as norm_uuid's string."""
    u = raw[::-1].hex()
    if len(raw) == 16:
        u = f"{u[0:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:32]}"
    return norm_uuid(u)


async def amgmt(*args: str, timeout: float = 15.0) -> str:
    """Async btmgmt (same stdin trick, bounded by `timeout`)."""
    p = await asyncio.create_subprocess_exec(
        "btmgmt", *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    try:
        out = await asyncio.wait_for(p.stdout.read(), timeout)
        await asyncio.wait_for(p.wait(), 5)
    except asyncio.TimeoutError:
        p.kill()
        await p.wait()
        raise TimeoutError(f"btmgmt {' '.join(args)} timed out")
    finally:
        if p.stdin:
            p.stdin.close()
    return out.decode(errors="replace")


async def open_user_channel(adapter: str):
    """Bumble's transport on controller `adapter` (hciN) through the kernel's HCI user channel. The channel needs
    the controller down and bluetoothd to let go of it: the index is powered off first (retried while the kernel
    says EBUSY); once bound, bluetoothd no longer sees it, until the channel is closed."""
    from bumble.transport import open_transport
    index = adapter.removeprefix("hci")
    last = None
    for _ in range(20):
        try:
            await amgmt("--index", index, "power", "off")
        except Exception as e:  # noqa: BLE001
            last = e
        try:
            return await open_transport(f"hci-socket:{index}")
        except Exception as e:  # noqa: BLE001 - EBUSY while powering down
            last = e
            await asyncio.sleep(0.5)
    raise RuntimeError(f"cannot open HCI user channel on {adapter}: {last}")


@dataclass
class AdvInfo:
    address: str
    name: str | None = None
    service_uuids: list[str] = field(default_factory=list)
    manufacturer_data: dict[int, bytes] = field(default_factory=dict)
    service_data: dict[str, bytes] = field(default_factory=dict)  # service UUID (norm_uuid) -> bytes after it
    rssi: int | None = None
    connectable: bool | None = None
    raw: object = None  # backend's own address/device object

    def matches(self, name=None, service_uuid=None, address=None, name_prefix=None, service_data_uuid=None) -> bool:
        """`service_uuid` matches the Service UUID lists only (AD types 0x02-0x07), as iOS's
        scanForPeripherals(withServices:) and Android's ScanFilter.setServiceUuid do; `service_data_uuid`
        matches service data (0x16, 0x20, 0x21), as ScanFilter.setServiceData does."""
        if name is not None and self.name != name:
            return False
        if name_prefix is not None and not (self.name or "").startswith(name_prefix):
            return False
        if service_uuid is not None and norm_uuid(service_uuid) not in self.service_uuids:
            return False
        if service_data_uuid is not None and norm_uuid(service_data_uuid) not in self.service_data:
            return False
        if address is not None and self.address.upper() != address.upper():
            return False
        return True


class ConnectError(Exception):
    pass


class PairingFailed(Exception):
    pass


@dataclass
class ConnectStats:
    """Per connect() call: number of setup attempts used (0 = failed). `errors` holds every
    failed attempt's error, of calls that then succeeded or failed, so a green run
    still says why it retried."""
    attempts: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def first_attempt_rate(self) -> float:
        return (sum(1 for a in self.attempts if a == 1) / len(self.attempts)) if self.attempts else 1.0

    def summary(self) -> str:
        n = len(self.attempts)
        first = sum(1 for a in self.attempts if a == 1)
        failed = sum(1 for a in self.attempts if a == 0)
        text = (f"{n} connects, first-attempt success {first}/{n} ({100.0 * first / max(n, 1):.0f}%), "
                f"retried {n - first - failed}, failed {failed}")
        return text + "".join(f"\n  {e}" for e in self.errors)


class Connection:
    mtu: int = 23
    adv: "AdvInfo | None" = None  # the advertisement connect() acted on

    async def read(self, uuid: str) -> bytes: raise NotImplementedError
    async def write(self, uuid: str, data: bytes, response: bool = True) -> None: raise NotImplementedError
    async def subscribe(self, uuid: str, callback: Callable[[bytes], None], indicate: bool = False) -> None:
        raise NotImplementedError
    async def read_descriptor(self, uuid: str, descriptor: str) -> bytes: raise NotImplementedError
    async def disconnect(self) -> None: raise NotImplementedError
    @property
    def is_connected(self) -> bool: raise NotImplementedError
    def service_uuids(self) -> list[str]: raise NotImplementedError


class Central:
    stack = "?"
    # How long an advertisement just found is good for connecting without a scan of its own (Bumble: a connection
    # needs only the address; each scan waited for the next advertising interval). 0: always scan.
    REUSE_FOUND = 0.0

    def __init__(self):
        self.stats = ConnectStats()
        self.last_connection: Connection | None = None  # what connect() returned last (a test looks at a flow's link)
        self._found: tuple[AdvInfo, float] | None = None  # the last advertisement find() returned, and when

    async def start(self): ...
    async def close(self): ...

    async def disconnect_all(self) -> None:
        """Drops every link this central has and waits until each is gone."""

    async def _scan(self, match: Callable[[AdvInfo], bool], window: float) -> AdvInfo | None:
        """One fresh discovery session of at most `window` s; first match or None."""
        raise NotImplementedError

    async def _connect_once(self, adv: AdvInfo, timeout: float, mtu: int = 517) -> Connection:
        raise NotImplementedError

    async def find(self, name=None, service_uuid=None, address=None, timeout: float = 30.0,
                   name_prefix=None, service_data_uuid=None) -> AdvInfo:
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no advertisement matching name={name or (name_prefix or '') + '*'} "
                                   f"service={service_uuid} service data={service_data_uuid} address={address} "
                                   f"within {timeout}s ({self.stack})")
            adv = await self._scan(lambda a: a.matches(name, service_uuid, address, name_prefix, service_data_uuid),
                                   min(left, 15.0))
            if adv:
                self._found = (adv, time.monotonic())
                return adv

    async def wait_gone(self, name=None, service_uuid=None, address=None, timeout: float = 30.0,
                        quiet: float = 6.0, name_prefix=None) -> None:
        """Return once a fresh scan of `quiet` seconds no longer sees the device
        (default advertising interval is 1.28 s, so ~4 intervals)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            adv = await self._scan(lambda a: a.matches(name, service_uuid, address, name_prefix), quiet)
            if adv is None:
                return
            await asyncio.sleep(0.5)
        raise AssertionError(f"device name={name} service={service_uuid} address={address} "
                             f"still advertising after {timeout}s")

    async def connect(self, address=None, *, name=None, service_uuid=None, name_prefix=None,
                      attempts: int = 3, scan_timeout: float = 30.0, timeout: float = 45.0,
                      mtu: int = 517) -> Connection:
        """Fresh scan + connect + service discovery + MTU exchange; retried up to
        `attempts` times. Records attempts in self.stats."""
        errors = []
        for attempt in range(1, attempts + 1):
            conn = None
            try:
                recent = self._found
                if (attempt == 1 and recent and time.monotonic() - recent[1] <= self.REUSE_FOUND
                        and recent[0].matches(name, service_uuid, address, name_prefix)):
                    adv = recent[0]  # just seen advertising: no second scan (a retry scans afresh)
                else:
                    adv = await self.find(name=name, service_uuid=service_uuid, address=address,
                                          name_prefix=name_prefix, timeout=scan_timeout)
                self._found = None
                conn = await asyncio.wait_for(self._connect_once(adv, timeout, mtu), timeout + 5)
                conn.adv = adv
                self.last_connection = conn
                self.stats.attempts.append(attempt)
                if attempt > 1:
                    log.warning("connect succeeded on attempt %d after: %s", attempt, errors)
                return conn
            except Exception as e:  # noqa: BLE001 - setup errors are retried
                test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]  # set by pytest
                msg = f"{test + ' ' if test else ''}attempt {attempt}: {type(e).__name__}: {e}"
                log.warning("connect %s", msg)
                print(f"central: connect {msg}", flush=True)
                errors.append(msg)
                self.stats.errors.append(msg)
                if conn is not None:
                    try:
                        await asyncio.wait_for(conn.disconnect(), 15)
                    except Exception:  # noqa: BLE001
                        pass
                await self._after_failed_connect()
        self.stats.attempts.append(0)
        raise ConnectError(f"connection setup failed {attempts} times ({self.stack}): " + "; ".join(errors))

    async def _after_failed_connect(self):
        await asyncio.sleep(1.0)


# --------------------------------------------------------------------- Bumble
# ATT requests that discover the GATT table: Find Information, Find By Type Value, Read By Type, Read By Group Type.
DISCOVERY_OPCODES = frozenset({0x04, 0x06, 0x08, 0x10})
SERVICE_CHANGED = 0x2A05  # the Service Changed characteristic of the GATT service bluetoothd serves


def changed_range(value) -> tuple[int, int]:
    """The handle range (start, end) a Service Changed indication carries."""
    value = bytes(value)
    return int.from_bytes(value[0:2], "little"), int.from_bytes(value[2:4], "little")


@dataclass
class CachedTable:
    """A bonded device's GATT table as a phone keeps it between connections (iOS does; so does Android for bonded
    devices): the services, characteristics and descriptors with their handles, as Bumble's proxies found them.
    `stale` is set by a Service Changed indication: the table is discovered again before it is used."""
    services: list = field(default_factory=list)  # [(uuid, handle, end, [(uuid, handle, end, properties, [(uuid, handle)])])]
    stale: bool = False
    changes: list = field(default_factory=list)  # (start, end) of each Service Changed indication received
    service_changed: int = 0  # the value handle of Service Changed in this table, 0 if it has none

    def handles(self) -> dict[str, int]:
        """Value handle of each characteristic by UUID (the first of a UUID)."""
        out: dict[str, int] = {}
        for _, _, _, chars in self.services:
            for uuid, handle, *_ in chars:
                out.setdefault(norm_uuid(uuid.to_hex_str("-")), handle)
        return out


class BumbleConnection(Connection):
    def __init__(self, device, connection, peer, cache_home: tuple[dict, str] | None = None):
        self._device = device
        self._conn = connection
        self._peer = peer
        self._disconnected = asyncio.Event()
        connection.on("disconnection", lambda *_: self._disconnected.set())
        # (the central's table cache, this peer's address) when the central keeps GATT caches (iOS-like)
        self._cache_home = cache_home
        self.from_cache = False  # this link used the cached table instead of discovering
        self._table_in_use: CachedTable | None = None  # the cached table this link uses (use_table)
        self.retried_after_service_changed = 0  # requests that hit a moved handle before Service Changed came
        self.requests: list[int] = []  # opcode of each ATT request this central sent on the link
        client = peer.gatt_client
        send = client.send_request

        async def counted(pdu):
            self.requests.append(pdu.op_code)
            return await send(pdu)
        client.send_request = counted

    @property
    def discovery_requests(self) -> int:
        """How many ATT requests of this link discovered the table (0 for a link that used a cached table)."""
        return sum(1 for op in self.requests if op in DISCOVERY_OPCODES)

    async def discover(self, timeout: float = 20.0, descriptors: bool = True) -> None:
        """Discovers the table (services, characteristics and, with `descriptors`, the descriptors of the ones that
        notify), forgetting what this link knew (Bumble keeps a service it knew even when discovery no longer finds it)."""
        self._peer.gatt_client.services = []
        await asyncio.wait_for(self._peer.discover_services(), timeout)
        await asyncio.wait_for(self._peer.discover_characteristics(), timeout)
        if not descriptors:
            return
        for service in self._peer.services:
            for char in service.characteristics:
                if char.properties & 0x30 and not char.descriptors_discovered:
                    await asyncio.wait_for(self._peer.discover_descriptors(char), timeout)

    def _service_changed(self) -> list:
        """The Service Changed characteristic in the table this link knows (none or one)."""
        from bumble.core import UUID
        return self._peer.get_characteristics_by_uuid(UUID.from_16_bits(SERVICE_CHANGED))

    def table(self) -> CachedTable:
        """The table this link knows, to keep for the next connection."""
        table = CachedTable()
        for s in self._peer.services:
            chars = [(c.uuid, c.handle, c.end_group_handle, int(c.properties),
                      [(d.type, d.handle) for d in c.descriptors]) for c in s.characteristics]
            table.services.append((s.uuid, s.handle, s.end_group_handle, chars))
        table.service_changed = next((c.handle for c in self._service_changed()), 0)
        return table

    def use_table(self, table: CachedTable) -> None:
        """Takes `table` as this link's GATT table without asking the device (a phone reconnecting to a bonded
        device): reads, writes and subscriptions go to the cached handles."""
        from bumble.gatt_client import CharacteristicProxy, DescriptorProxy, ServiceProxy
        client = self._peer.gatt_client
        services = []
        for uuid, handle, end, chars in table.services:
            service = ServiceProxy(client, handle, end, uuid)
            for c_uuid, c_handle, c_end, properties, descriptors in chars:
                char = CharacteristicProxy(client, c_handle, c_end, c_uuid, properties)
                char.descriptors = [DescriptorProxy(client, d_handle, d_type) for d_type, d_handle in descriptors]
                char.descriptors_discovered = True
                service.characteristics.append(char)
            services.append(service)
        client.services = services
        self.from_cache = True
        self._table_in_use = table

    def watch_service_changed(self, table: CachedTable) -> None:
        """From now on a Service Changed indication on this link marks `table` stale (kept by the central, so a
        connection attempt that fails after receiving it still leaves the table to be discovered again)."""
        if not table.service_changed:
            return

        def changed(value):
            table.stale = True
            table.changes.append(changed_range(value))
        self._peer.gatt_client.indication_subscribers.setdefault(table.service_changed, set()).add(changed)

    async def keep_table(self) -> None:
        """Saves this link's table as the central's cache for the device, with the descriptors and a Service
        Changed subscription (what a phone does once bonded)."""
        if self._cache_home is None:
            return
        await self.discover()
        cache, address = self._cache_home
        table = self.table()
        if address in cache:
            table.changes = cache[address].changes
        cache[address] = table
        if table.service_changed:
            await self._service_changed()[0].subscribe(None, prefer_notify=False)
            self.watch_service_changed(table)

    @property
    def mtu(self) -> int:
        return self._conn.att_mtu

    @property
    def is_connected(self) -> bool:
        return not self._disconnected.is_set()

    def service_uuids(self) -> list[str]:
        return [norm_uuid(s.uuid.to_hex_str("-")) for s in self._peer.services]

    def service_ranges(self, uuid: str) -> list[tuple[int, int]]:
        """The handle range (first, last) of each service of `uuid` this link found."""
        return [(s.handle, s.end_group_handle) for s in self._peer.services if norm_uuid(s.uuid.to_hex_str("-")) == norm_uuid(uuid)]

    def _char(self, uuid):
        from bumble.core import UUID
        chars = self._peer.get_characteristics_by_uuid(UUID(norm_uuid(uuid)))
        if not chars:
            raise KeyError(f"characteristic {uuid} not found")
        return chars[0]

    def _note(self, *op) -> None:
        """What the central completed goes to the recording capturing it (checked when it closes)."""
        ops = getattr(self._device.host.snooper, "ops", None)
        if ops is not None:
            ops.append(op)

    async def _on_current_table(self, operation):
        """Runs `operation()` as an iOS-like central on a cached table does: a Service Changed that arrived
        while it used the cache makes it discover again first (iOS: didModifyServices, the app discovers again);
        an Invalid Handle on a cached handle waits a moment for that Service Changed (bluetoothd sends it once
        the link is encrypted, which may be after the first request) and, if it came, retries on the new table."""
        from bumble.att import ATT_Error, ErrorCode
        table = self._table_in_use
        await self._follow_service_changed()
        try:
            return await operation()
        except ATT_Error as error:
            if table is None or self._table_in_use is None or error.error_code != ErrorCode.INVALID_HANDLE:
                raise
            for _ in range(30):
                if table.stale:
                    break
                await asyncio.sleep(0.1)
            if not table.stale:
                raise
            await self._leave_cache()
            self.retried_after_service_changed += 1
            return await operation()

    async def _follow_service_changed(self) -> None:
        """Discovers again when a Service Changed came while this link used the cached table."""
        if self._table_in_use is not None and self._table_in_use.stale:
            await self._leave_cache()

    async def _leave_cache(self) -> None:
        self._table_in_use = None
        self.from_cache = False
        await self.keep_table()

    async def read(self, uuid):
        value = bytes(await self._on_current_table(lambda: self._char(uuid).read_value()))
        self._note("read", value.hex())
        return value

    async def write(self, uuid, data, response=True):
        await self._on_current_table(lambda: self._char(uuid).write_value(bytes(data), with_response=response))
        self._note("write", bytes(data).hex())

    async def read_descriptor(self, uuid, descriptor):
        """The value of the descriptor `descriptor` (e.g. "2901", User Description) of characteristic `uuid`."""
        from bumble.core import UUID
        char = self._char(uuid)
        if not char.descriptors_discovered:
            await self._peer.discover_descriptors(char)
        found = char.get_descriptor(UUID(norm_uuid(descriptor)))
        if found is None:
            raise KeyError(f"descriptor {descriptor} of {uuid} not found")
        return bytes(await found.read_value())

    async def subscribe(self, uuid, callback, indicate=False):
        await self._follow_service_changed()
        char = self._char(uuid)
        kind = "indicate" if indicate and char.properties & 0x20 else "notify" if char.properties & 0x10 else "indicate"

        def received(value):
            self._note(kind, bytes(value).hex())
            callback(bytes(value))

        await char.subscribe(received, prefer_notify=not indicate)

    async def pair(self, io: str = "KeyboardDisplay", *, sc: bool = True, mitm: bool = True, bonding: bool = True,
                   type_passkey=None, show_passkey=None, compare=None, passkey: int | None = None,
                   timeout: float = 60.0) -> None:
        """Pairs this link as a phone's user would, with the central's IO capability `io` (DisplayOnly,
        DisplayYesNo, KeyboardOnly, NoInputNoOutput, KeyboardDisplay). Callbacks (async) stand for the user:
        `type_passkey()` returns the passkey to type (the device shows one), `show_passkey(n)` gets the number
        this central shows (the device types it), `compare(n)` says whether the device shows n too (numeric
        comparison; default yes). `passkey`: the number this central shows, instead of a random one (an attacker
        who knows what the other side will type). Raises PairingFailed with the reason."""
        from bumble.pairing import PairingConfig, PairingDelegate
        capability = {
            "DisplayOnly": PairingDelegate.DISPLAY_OUTPUT_ONLY, "DisplayYesNo": PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
            "KeyboardOnly": PairingDelegate.KEYBOARD_INPUT_ONLY, "NoInputNoOutput": PairingDelegate.NO_OUTPUT_NO_INPUT,
            "KeyboardDisplay": PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT}[io]
        asked: list[str] = []
        self.pairing_prompts = asked

        class User(PairingDelegate):
            async def accept(self):
                return True

            async def confirm(self, auto=False):
                asked.append("confirm")
                return True

            async def compare_numbers(self, number, digits=6):
                asked.append(f"compare {number:06d}")
                return await compare(number) if compare else True

            async def get_number(self):
                asked.append("type")
                if type_passkey is None:
                    return None
                return await type_passkey()

            async def generate_passkey(self):
                return passkey if passkey is not None else await super().generate_passkey()

            async def display_number(self, number, digits=6):
                asked.append(f"show {number:06d}")
                if show_passkey is not None:
                    await show_passkey(number)

        config = PairingConfig(sc=sc, mitm=mitm, bonding=bonding, delegate=User(io_capability=capability))
        previous = self._device.pairing_config_factory
        self._device.pairing_config_factory = lambda _connection: config
        try:
            await asyncio.wait_for(self._conn.pair(), timeout)
        except Exception as e:  # noqa: BLE001 - Bumble raises its protocol errors
            raise PairingFailed(f"{type(e).__name__}: {e}") from e
        finally:
            self._device.pairing_config_factory = previous
        if bonding:
            await self.keep_table()

    async def request_mtu(self, mtu: int, timeout: float = 20.0) -> int:
        """Exchanges the ATT MTU now (Android's requestMtu); returns the MTU in use."""
        await asyncio.wait_for(self._peer.request_mtu(mtu), timeout)
        return self.mtu

    async def on_service_changed(self, callback: Callable[[int, int], None]) -> None:
        """Subscribes to the GATT service's Service Changed indications; `callback(start, end)` gets the
        affected handle range (as a phone's stack does before it discovers again)."""
        chars = self._service_changed()
        if not chars:
            raise KeyError("no Service Changed characteristic")

        def received(value):
            self._note("indicate", "")  # tshark decodes the handle range by type: counted, not compared
            callback(*changed_range(value))

        await chars[0].subscribe(received, prefer_notify=False)

    def service_changed_received(self) -> tuple[int, int] | None:
        """The handle range of the last Service Changed indication this link received, also one that arrived before
        anything subscribed (bluetoothd indicates it as soon as a bonded central is back); None if none came."""
        chars = self._service_changed()
        cached = self._peer.gatt_client.cached_values.get(chars[0].handle) if chars else None
        return None if cached is None else changed_range(cached[1])

    async def rediscover(self, timeout: float = 20.0) -> list[str]:
        """Discovers the GATT table again; returns its service UUIDs."""
        await self.discover(timeout)
        return self.service_uuids()

    async def encrypt(self, timeout: float = 30.0) -> None:
        """Encrypts the link with the keys of an earlier pairing (a bonded phone reconnecting); raises
        PairingFailed when the device no longer has them (HCI 0x06, PIN or key missing)."""
        try:
            await asyncio.wait_for(self._conn.encrypt(), timeout)
        except Exception as e:  # noqa: BLE001
            raise PairingFailed(f"{type(e).__name__}: {e}") from e

    @property
    def encrypted(self) -> bool:
        return bool(self._conn.is_encrypted)

    @property
    def secure_connections(self) -> bool:
        """The last pairing of this link used LE Secure Connections (False: legacy pairing)."""
        return bool(getattr(self._conn, "sc", False))

    async def forget_keys(self) -> None:
        """Drops this central's keys for the peer (as "forget this device" on a phone)."""
        keystore = self._device.keystore
        if keystore is not None:
            try:
                await keystore.delete(str(self._conn.peer_address))
            except KeyError:
                pass

    async def disconnect(self):
        if self._disconnected.is_set():
            return
        try:
            await self._conn.disconnect()
        except Exception as e:  # noqa: BLE001 - may already be gone
            log.info("disconnect: %s", e)
        try:
            await asyncio.wait_for(self._disconnected.wait(), 10)
        except asyncio.TimeoutError:
            pass


class Recording:
    """The central's HCI traffic going to a btsnoop file (Bumble's snooper); a context manager. `ops` are the
    operations the central completed meanwhile; closing checks the capture holds them (captures.py), or with
    `check="later"` writes them beside the capture (`<capture>.ops.json`) for scripts/e2e to check on the host
    once the VM is done (tshark takes seconds to start under TCG, a fraction of one on the host: a capture to be checked
    later belongs in $GATTEMU_OUT, named central-*.btsnoop). `exact`: the capture holds those operations and no
    others."""

    def __init__(self, central: "BumbleCentral", path, check: str = "now", exact: bool = False):
        from bumble.snoop import BtSnooper
        assert check in ("now", "later"), check
        self.central, self.path, self.check, self.exact = central, path, check, exact
        self.file = open(path, "wb")
        self.previous = central.device.host.snooper
        snooper = BtSnooper(self.file)
        snooper.ops = self.ops = []
        central.device.host.snooper = snooper
        self.figures: dict = {}

    def close(self) -> None:
        if self.file is None:
            return
        self.central.device.host.snooper = self.previous
        self.file.close()
        self.file = None
        if self.check == "now":
            from captures import check_complete
            self.figures = check_complete(self.path, self.ops, exact=self.exact)
        else:
            from captures import write_ops
            write_ops(self.path, self.ops, exact=self.exact)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


class BumbleCentral(Central):
    stack = "bumble"
    REUSE_FOUND = 2.0

    def __init__(self, adapter: str, address: str = "F0:E0:D0:00:00:01"):
        super().__init__()
        self.adapter = adapter
        self.address = address  # each central of a multi-central test needs its own
        self.index = int(adapter.removeprefix("hci"))
        self.transport = None
        self.device = None
        # GATT tables of bonded devices by address, when this central keeps them (keep_gatt_cache): None = it
        # discovers on every connection
        self.gatt_cache: dict[str, CachedTable] | None = None
        # The random address this central connects from (take_random_address); None: the controller's public one
        self.random_address: str | None = None

    def keep_gatt_cache(self) -> dict[str, CachedTable]:
        """Makes this central keep the GATT table of each device it bonds with and use it when it reconnects:
        no discovery, the link encrypted with the bond's keys at once, the table discovered again only after a
        Service Changed indication (as iOS does). Returns the cache (by device address)."""
        if self.gatt_cache is None:
            self.gatt_cache = {}
        return self.gatt_cache

    async def start(self):
        from bumble.device import Device
        from bumble.hci import Address
        logging.getLogger("bumble").setLevel(logging.WARNING)
        self.transport = await open_user_channel(self.adapter)
        self.device = Device.with_hci("gattemu-central", Address(self.address),
                                      self.transport.source, self.transport.sink)
        await asyncio.wait_for(self.device.power_on(), 30)

    async def take_random_address(self, address: str | None) -> None:
        """Connects from now on with `address` as a random address (any six bytes: a spoofer's, e.g. another
        device's), instead of the controller's public one; None: the public one again. Not while scanning or
        connecting."""
        if address is not None:
            from bumble import hci
            random = hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS)
            await self.device.send_command(hci.HCI_LE_Set_Random_Address_Command(random_address=random))
            self.device.random_address = random
        self.random_address = address

    def record(self, path, check: str = "now", exact: bool = False) -> "Recording":
        """Writes this central's HCI traffic (what a phone's btsnoop_hci.log holds) to `path` as btsnoop
        until the returned recording is closed; the recording before it (if any) resumes then."""
        return Recording(self, path, check, exact)

    async def disconnect_all(self):
        if self.device is None:
            return
        for c in list(self.device.connections.values()):
            gone = asyncio.Event()
            c.on("disconnection", lambda *_: gone.set())
            try:
                await asyncio.wait_for(c.disconnect(), 10)
                await asyncio.wait_for(gone.wait(), 10)
            except Exception as e:  # noqa: BLE001 - already gone, or the controller lost it
                log.info("disconnect_all: %s", e)

    async def close(self):
        if self.device is not None:
            for c in list(self.device.connections.values()):
                try:
                    await asyncio.wait_for(c.disconnect(), 5)
                except Exception:  # noqa: BLE001
                    pass
            try:
                await asyncio.wait_for(self.device.power_off(), 5)
            except Exception:  # noqa: BLE001
                pass
        if self.transport is not None:
            await self.transport.close()
        self.device = self.transport = None

    @staticmethod
    def _info(adv, acc: dict) -> AdvInfo:
        from bumble.core import AdvertisingData as AD
        addr = str(adv.address).split("/")[0].upper()
        info = acc.get(addr)
        if info is None:
            info = acc[addr] = AdvInfo(address=addr)
        info.raw = adv.address
        info.rssi = adv.rssi
        if not adv.is_scan_response:
            info.connectable = adv.is_connectable
        data = adv.data
        for t in (AD.COMPLETE_LOCAL_NAME, AD.SHORTENED_LOCAL_NAME):
            for raw in data.get_all(t, raw=True):
                info.name = bytes(raw).decode("utf-8", "replace")
        for t, width in ((0x02, 2), (0x03, 2), (0x04, 4), (0x05, 4), (0x06, 16), (0x07, 16)):
            for raw in data.get_all(t, raw=True):
                raw = bytes(raw)
                for i in range(0, len(raw) - width + 1, width):
                    u = uuid_from_le(raw[i:i + width])
                    if u not in info.service_uuids:
                        info.service_uuids.append(u)
        for raw in data.get_all(0xFF, raw=True):
            raw = bytes(raw)
            if len(raw) >= 2:
                info.manufacturer_data[int.from_bytes(raw[:2], "little")] = raw[2:]
        for t, width in ((0x16, 2), (0x20, 4), (0x21, 16)):
            for raw in data.get_all(t, raw=True):
                raw = bytes(raw)
                if len(raw) >= width:
                    info.service_data[uuid_from_le(raw[:width])] = raw[width:]
        return info

    async def _scan(self, match, window):
        acc: dict = {}
        found: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_adv(adv):
            info = self._info(adv, acc)
            if match(info) and not found.done():
                found.set_result(info)

        self.device.on("advertisement", on_adv)
        try:
            await self.device.start_scanning(filter_duplicates=False, active=True)
            try:
                return await asyncio.wait_for(asyncio.shield(found), window)
            except asyncio.TimeoutError:
                return None
        finally:
            self.device.remove_listener("advertisement", on_adv)
            try:
                await self.device.stop_scanning()
            except Exception as e:  # noqa: BLE001
                log.info("stop_scanning: %s", e)

    async def _connect_once(self, adv, timeout, mtu=517):
        from bumble.core import PhysicalTransport
        from bumble.device import Peer
        from bumble.hci import OwnAddressType
        # bluetoothd starts an MTU exchange of its own as soon as the link is up: what this central answers is
        # its largest MTU, as a phone's stack does (517 for Android and Bumble, 185 for iOS; 23 stands for a
        # stack that keeps the default until the app asks, mtu=0).
        self.device.gatt_server.max_mtu = min(mtu, 517) if mtu else 23
        own = OwnAddressType.PUBLIC if self.random_address is None else OwnAddressType.RANDOM
        conn = await self.device.connect(adv.raw, transport=PhysicalTransport.LE, own_address_type=own, timeout=timeout)
        dropped = []  # the link's disconnection reason, if it goes down during setup
        conn.on("disconnection", dropped.append)
        home = (self.gatt_cache, adv.address) if self.gatt_cache is not None else None
        c = BumbleConnection(self.device, conn, Peer(conn), home)
        table = self.gatt_cache.get(adv.address) if self.gatt_cache is not None else None
        if table is not None:
            c.watch_service_changed(table)  # bluetoothd indicates a change it kept for a bonded central at once
        try:
            if table is not None:
                # A phone encrypts a link to a bonded device at once, before its own ATT requests. One that waits
                # for its MTU answer first can wait for ever: a request that reached bluetoothd before it had taken
                # the link (it then asks for security with a Security Request) got no answer on the unencrypted link
                # (a fresh-clone run: 20 s, twice; and bluetoothd dropped the Service Changed it kept for the bond
                # with that link, so the next connection was never told the handles moved).
                await c.encrypt()
            if mtu:  # 0: no MTU exchange from this side (an Android app before requestMtu): ATT MTU 23
                await asyncio.wait_for(c._peer.request_mtu(mtu), 20)
            if table is not None:
                await asyncio.sleep(0.2)  # an indication bluetoothd queued behind the encryption lands
            if table is None:
                await c.discover(20, descriptors=False)
            elif table.stale:  # Service Changed came (on this link or an attempt before): discover again, keep it
                await c.keep_table()
            else:
                c.use_table(table)
        except asyncio.CancelledError:
            await c.disconnect()
            if asyncio.current_task().cancelling():
                raise  # this setup itself was cancelled (a timeout around it, the test's end)
            # Bumble cancels a pending ATT request when the link goes down: a setup error, retried like any other
            # (seen once: a central that reconnected ~40 ms after RemoveDevice answered lost its link 3 ms later).
            reason = f"0x{dropped[0]:02X}" if dropped else "unknown"
            raise ConnectionError(f"link dropped during connection setup (disconnection reason {reason})") from None
        except BaseException:
            await c.disconnect()
            raise
        return c

    async def _after_failed_connect(self):
        if self.device is not None and self.device.is_le_connecting:
            try:
                await self.device.cancel_connection()
            except Exception:  # noqa: BLE001
                pass
        await asyncio.sleep(1.0)


# ---------------------------------------------------------------- BlueZ/bleak
class BleakConnection(Connection):
    def __init__(self, client):
        self._client = client
        self.mtu = 23

    @property
    def is_connected(self):
        return self._client.is_connected

    def service_uuids(self):
        return [norm_uuid(s.uuid) for s in self._client.services]

    async def read(self, uuid):
        return bytes(await self._client.read_gatt_char(norm_uuid(uuid)))

    async def write(self, uuid, data, response=True):
        await self._client.write_gatt_char(norm_uuid(uuid), bytes(data), response=response)

    async def read_descriptor(self, uuid, descriptor):
        char = self._client.services.get_characteristic(norm_uuid(uuid))
        found = char.get_descriptor(norm_uuid(descriptor)) if char is not None else None
        if found is None:
            raise KeyError(f"descriptor {descriptor} of {uuid} not found")
        return bytes(await self._client.read_gatt_descriptor(found.handle))

    async def subscribe(self, uuid, callback, indicate=False):
        # BlueZ picks notify or indicate from the characteristic's flags.
        await self._client.start_notify(norm_uuid(uuid), lambda _c, data: callback(bytes(data)))

    async def disconnect(self):
        try:
            await asyncio.wait_for(self._client.disconnect(), 20)
        except Exception as e:  # noqa: BLE001
            log.info("disconnect: %s", e)


class BluezCentral(Central):
    """bleak on BlueZ. Before every scan the central adapter forgets remembered
    devices and is power-cycled: btvirt's advertisements never change, so BlueZ
    would otherwise not report a known device again."""
    stack = "bluez"

    def __init__(self, adapter: str):
        super().__init__()
        self.adapter = adapter
        self.index = adapter.removeprefix("hci")
        self.bus = None

    async def start(self):
        from dbus_fast import BusType
        from dbus_fast.aio import MessageBus
        self.bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
        await amgmt("--index", self.index, "power", "on")

    async def close(self):
        if self.bus is not None:
            self.bus.disconnect()
            self.bus = None

    async def disconnect_all(self):
        prefix = f"/org/bluez/{self.adapter}/dev_"
        try:
            (objs,) = await self._call("/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        except RuntimeError as e:
            log.info("GetManagedObjects: %s", e)
            return
        for path, interfaces in objs.items():
            device = interfaces.get("org.bluez.Device1", {})
            connected = device.get("Connected")
            if path.startswith(prefix) and connected is not None and connected.value:
                try:
                    await self._call(path, "org.bluez.Device1", "Disconnect")
                except RuntimeError as e:
                    log.info("Disconnect %s: %s", path, e)

    async def _call(self, path, iface, member, signature="", body=()):
        from dbus_fast import Message, MessageType
        reply = await self.bus.call(Message(destination="org.bluez", path=path, interface=iface,
                                            member=member, signature=signature, body=list(body)))
        if reply.message_type == MessageType.ERROR:
            raise RuntimeError(f"{member}: {reply.error_name} {reply.body}")
        return reply.body

    async def _forget_and_cycle(self):
        prefix = f"/org/bluez/{self.adapter}/dev_"
        try:
            (objs,) = await self._call("/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
            for path in objs:
                if path.startswith(prefix) and path.count("/") == 4:
                    try:
                        await self._call(f"/org/bluez/{self.adapter}", "org.bluez.Adapter1",
                                         "RemoveDevice", "o", [path])
                    except RuntimeError as e:
                        log.info("RemoveDevice %s: %s", path, e)
        except RuntimeError as e:
            log.info("GetManagedObjects: %s", e)
        await amgmt("--index", self.index, "power", "off")
        await amgmt("--index", self.index, "power", "on")

    async def _scan(self, match, window):
        from bleak import BleakScanner
        await self._forget_and_cycle()
        found: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_adv(device, ad):
            info = AdvInfo(address=device.address.upper(), name=ad.local_name,
                           service_uuids=[norm_uuid(u) for u in ad.service_uuids],
                           manufacturer_data={k: bytes(v) for k, v in ad.manufacturer_data.items()},
                           service_data={norm_uuid(k): bytes(v) for k, v in ad.service_data.items()},
                           rssi=ad.rssi, raw=device)
            if match(info) and not found.done():
                found.set_result(info)

        scanner = BleakScanner(on_adv, bluez={"adapter": self.adapter})
        await scanner.start()
        try:
            return await asyncio.wait_for(asyncio.shield(found), window)
        except asyncio.TimeoutError:
            return None
        finally:
            try:
                await scanner.stop()
            except Exception as e:  # noqa: BLE001
                log.info("scanner stop: %s", e)

    async def _connect_once(self, adv, timeout, mtu=517):
        # bleak on BlueZ always negotiates BlueZ's MTU (517); `mtu` applies to the Bumble central only.
        from bleak import BleakClient
        client = BleakClient(adv.raw, bluez={"adapter": self.adapter}, timeout=timeout)
        await client.connect()
        c = BleakConnection(client)
        try:
            await client._backend._acquire_mtu()  # noqa: SLF001 - bleak's documented workaround
            c.mtu = client.mtu_size
        except Exception as e:  # noqa: BLE001
            log.info("acquire mtu: %s", e)
        return c


async def open_central(stack: str | None = None, adapter: str | None = None,
                       address: str | None = None) -> Central:
    """address: the Bumble central's own address (default F0:E0:D0:00:00:01); give a
    second central (adapter=$GATTEMU_CENTRAL2) another one, e.g. F0:E0:D0:00:00:02."""
    stack = stack or stack_name()
    adapter = adapter or os.environ.get("GATTEMU_CENTRAL")
    if not adapter:
        raise RuntimeError("GATTEMU_CENTRAL not set: run inside scripts/sandbox")
    if stack == "bumble":
        c: Central = BumbleCentral(adapter, address) if address else BumbleCentral(adapter)
    elif stack == "bluez":
        c = BluezCentral(adapter)
    else:
        raise ValueError(f"unknown GATTEMU_CENTRAL_STACK {stack!r} (bumble|bluez)")
    await c.start()
    return c
