"""Pairing with gattemu as a phone pairs: every IO-capability combination BlueZ supports as a peripheral,
bonds kept across a gattemu restart, a bond forgotten behind the central's back, refusals and a wrong passkey.

The device is BLEProof with its `info` characteristic flagged `encrypt-read`: unreadable before pairing,
readable after. gattemu's pairing agent answers from the profile's `security` section; what a phone's user
would see or type goes through the control API (GET/POST /v1/pairing). Prints a table mode × result.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from central import PairingFailed
from conftest import report
from controlapi import api, wait_for_api

PORT = 8765
API = f"http://127.0.0.1:{PORT}"
INFO = "00002bb0-0000-1000-8000-00805f9b34fb"
ROOT = Path(os.environ.get("GATTEMU_ROOT", Path(__file__).resolve().parents[2]))
TABLE: list[tuple[str, str, str, str]] = []


def bleproof_named(tmp_path: Path, name: str, edit=None) -> str:
    """BLEProof named and advertised as `name`, changed by `edit(profile)` when given, as a file."""
    profile = json.loads((ROOT / "profiles" / "bleproof.json").read_text())
    profile.pop("$schema", None)
    profile["device"]["name"] = name
    profile["advertisements"][0]["localName"] = name
    if edit is not None:
        edit(profile)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(profile))
    return str(path)


def secure_profile(tmp_path: Path, security: dict | None, name: str) -> str:
    """BLEProof with `info` needing encryption, and the given security section, as a file."""
    def edit(profile):
        for characteristic in profile["services"][0]["characteristics"]:
            if characteristic["id"] == "info":
                characteristic["flags"] = ["read", "encrypt-read"]
        if security is not None:
            profile["security"] = security
    return bleproof_named(tmp_path, name, edit)


async def displayed_passkey(timeout: float = 20.0) -> int:
    """The passkey gattemu shows (GET /v1/pairing), as a user reads it off the device."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _, body = await api("GET", "/v1/pairing")
        if body.get("displayed"):
            return int(body["displayed"]["passkey"])
        await asyncio.sleep(0.1)
    raise AssertionError("gattemu displayed no passkey")


async def answer_prompt(body: dict, kind: str, timeout: float = 20.0) -> dict:
    """Waits for gattemu's prompt of `kind` and answers it through the control API."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _, status = await api("GET", "/v1/pairing")
        prompt = status.get("prompt")
        if prompt:
            assert prompt["kind"] == kind, status
            code, answered = await api("POST", "/v1/pairing", {"prompt": prompt["id"], **body})
            assert code == 200, answered
            return prompt
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {kind} prompt from gattemu")


async def read_info(conn) -> str:
    try:
        return "read " + (await conn.read(INFO)).decode()
    except Exception as e:  # noqa: BLE001 - the ATT error is the result
        return f"refused ({type(e).__name__}: {str(e)[:60]})"


def events_of(peripheral, kind: str) -> list[dict]:
    if peripheral.events is None or not peripheral.events.exists():
        return []
    out = []
    for line in peripheral.events.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == kind:
            out.append(event)
    return out


async def logged(peripheral, kind: str, timeout: float = 5.0) -> list[dict]:
    """The events of `kind` once gattemu's event file has them (it is written in batches)."""
    end = time.monotonic() + timeout
    while True:
        found = events_of(peripheral, kind)
        if found or time.monotonic() >= end:
            return found
        await asyncio.sleep(0.1)


@pytest.fixture
def secure(start_gattemu, tmp_path, needs_separate_stack):
    """Factory: starts gattemu on a secure BLEProof with `security`; returns (peripheral, name)."""
    count = 0

    def start(security: dict | None):
        nonlocal count
        count += 1
        name = f"Secure{count}"
        path = secure_profile(tmp_path, security, name)
        p = start_gattemu(path, args=["--control", f"127.0.0.1:{PORT}"])
        return p, name

    return start


async def central_address(timeout: float = 10.0) -> str:
    """The connected central's address as gattemu sees it (the controller's, whatever Bumble was told)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _, status = await api("GET", "/v1/status")
        if status.get("centrals"):
            return status["centrals"][0]["address"]
        await asyncio.sleep(0.2)
    raise AssertionError("gattemu lists no connected central")


async def forget_everywhere(conn) -> None:
    """The central and gattemu both forget the pairing (the next test starts unpaired)."""
    await conn.forget_keys()
    _, bonds = await api("GET", "/v1/bonds")
    for bond in bonds.get("bonds", []):
        code, body = await api("DELETE", f"/v1/bonds/{bond['central']}")
        assert code in (200, 404), body


MODES = [
    # mode, gattemu's security, the central's IO, how the users act, expected outcome
    ("just works (no prompt)", None, "KeyboardDisplay", "none", "paired"),
    ("passkey shown by gattemu, typed on the central", {"io": "DisplayOnly"}, "KeyboardOnly", "type-displayed", "paired"),
    ("passkey shown by the central, typed into gattemu (API)", {"io": "KeyboardOnly"}, "DisplayOnly", "api-passkey", "paired"),
    ("fixed passkey from the profile (both type it)", {"io": "KeyboardOnly", "passkey": "123456"}, "KeyboardOnly", "type-123456", "paired"),
    ("numeric comparison, confirmed by gattemu", {"io": "DisplayYesNo"}, "DisplayYesNo", "none", "paired"),
    ("numeric comparison, confirmed through the API", {"io": "DisplayYesNo", "confirm": "api"}, "DisplayYesNo", "api-compare", "paired"),
    ("pairing refused by the profile", {"pairing": "refuse"}, "KeyboardDisplay", "none", "failed"),
    ("wrong passkey typed on the central", {"io": "DisplayOnly"}, "KeyboardOnly", "type-wrong", "failed"),
    ("numeric comparison refused through the API", {"io": "DisplayYesNo", "confirm": "api"}, "DisplayYesNo", "api-refuse", "failed"),
    ("next pairing refused by a fault", None, "KeyboardDisplay", "fault-refuse", "failed"),
    ("gattemu types a wrong passkey (fault)", {"io": "KeyboardOnly", "passkey": "123456"}, "KeyboardOnly", "fault-wrong", "failed"),
]


@pytest.mark.parametrize("mode,security,io,users,expected", MODES, ids=[m[0].split(" (")[0].replace(" ", "-")[:40] for m in MODES])
async def test_pairing_mode(central, secure, mode, security, io, users, expected):
    p, name = secure(security)
    await wait_for_api(p)
    conn = await central.connect(name=name)
    try:
        if users.startswith("fault-"):
            fault = {"refuse": True, "count": 1} if users == "fault-refuse" else {"on": "pair", "wrongPasskey": True}
            code, body = await api("POST", "/v1/faults", fault)
            assert code == 201, body
        before = await read_info(conn)
        assert before.startswith("refused"), f"encrypt-read answered before pairing: {before}"
        tasks = []

        async def type_passkey():
            if users in ("type-123456", "fault-wrong"):
                return 123456
            shown = await displayed_passkey()
            return (shown + 1) % 1_000_000 if users == "type-wrong" else shown

        async def show_passkey(number):
            if users == "api-passkey":
                tasks.append(asyncio.create_task(answer_prompt({"passkey": f"{number:06d}"}, "passkey-entry")))

        async def compare(number):
            if users in ("api-compare", "api-refuse"):
                answer = {"passkey": f"{number:06d}"} if users == "api-compare" else {"accept": False}
                tasks.append(asyncio.create_task(answer_prompt(answer, "numeric-comparison")))
            return True

        outcome = "paired"
        try:
            await conn.pair(io, type_passkey=type_passkey, show_passkey=show_passkey, compare=compare)
        except PairingFailed as e:
            outcome = f"failed ({e})"
        for task in tasks:
            await task
        after = await read_info(conn) if conn.is_connected else "disconnected"
        prompts = ", ".join(getattr(conn, "pairing_prompts", [])) or "none"
        TABLE.append((mode, io, outcome.split(" (")[0], after.split(" (")[0]))
        report(f"pairing | {mode} | gattemu {security or 'default'} | central {io} | central asked: {prompts} | "
               f"{outcome[:80]} | info: {after[:40]}")
        if expected == "paired":
            assert outcome == "paired", p.tail()
            assert after == "read iPhone ABC", after
            assert conn.encrypted
            pairing_events = events_of(p, "pairing")
            if security is None:
                assert all("accepted" in e.get("detail", "") for e in pairing_events), pairing_events
            assert await logged(p, "paired"), "gattemu logged the pairing"
        else:
            assert outcome.startswith("failed"), outcome
            assert not after.startswith("read "), after
    finally:
        await forget_everywhere(conn)
        await conn.disconnect()


SC_MODES = [
    # gattemu's security, the central's IO, whether it offers Secure Connections, expected outcome
    ({"secureConnections": "off"}, "KeyboardDisplay", True, "legacy"),
    ({"secureConnections": "on"}, "KeyboardDisplay", True, "secure connections"),
    ({"secureConnections": "on"}, "KeyboardDisplay", False, "legacy"),
]


@pytest.mark.parametrize("security,io,central_sc,expected", SC_MODES,
                         ids=[f"{s['secureConnections']}-{io}-{'sc' if c else 'legacy'}" for s, io, c, _ in SC_MODES])
async def test_secure_connections_mode(central, secure, security, io, central_sc, expected):
    """`security.secureConnections`: `off` pairs the legacy way even with a central that offers Secure Connections
    (a Bluetooth 4.0/4.1 device); `on` pairs with Secure Connections when the central offers it and falls back to
    legacy pairing otherwise. (`only` is refused by validate: Linux drops such links, docs/pairing.md.)"""
    mode = security["secureConnections"]
    p, name = secure(security)
    await wait_for_api(p)
    conn = await central.connect(name=name)
    try:
        outcome = "paired"
        try:
            await conn.pair(io, sc=central_sc)
        except PairingFailed as e:
            outcome = f"failed ({e})"
        if outcome == "paired":
            await asyncio.sleep(1.0)  # the link must stay up after pairing
        after = await read_info(conn) if conn.is_connected else "disconnected"
        if outcome == "paired" and after == "disconnected":
            outcome = "failed (paired, then the device dropped the link)"
        method = ("secure connections" if conn.secure_connections else "legacy") if outcome == "paired" else "failed"
        TABLE.append((f"secureConnections {mode}, gattemu {security.get('io', 'NoInputNoOutput')}, central {'with' if central_sc else 'without'} SC",
                      io, outcome.split(" (")[0] + ("" if outcome != "paired" else f" ({method})"), after.split(" (")[0]))
        report(f"pairing | secureConnections {mode} | central {io} sc={central_sc} | {outcome[:80]} | {method} | info: {after[:40]}")
        if expected == "failed":
            assert outcome.startswith("failed"), outcome
            assert not after.startswith("read "), after
        else:
            assert outcome == "paired", p.tail()
            assert method == expected, method
            assert after == "read iPhone ABC", after
        if mode != "on":
            out = await p.output_when(lambda o: "LE Secure Connections" in o)
            assert f"LE Secure Connections {mode}" in out, p.tail()
    finally:
        await forget_everywhere(conn)
        await conn.disconnect()


async def test_bond_survives_a_gattemu_restart_and_a_forgotten_bond_fails_like_a_reset_device(central, secure):
    """Pair (bond); restart gattemu; the central reconnects and encrypts with its keys. Then gattemu forgets the
    bond behind the central's back: the central's encrypted reconnect fails (PIN or key missing), and pairing
    again makes it work."""
    p, name = secure(None)
    await wait_for_api(p)
    conn = await central.connect(name=name)
    steps = []
    try:
        await conn.pair("KeyboardDisplay")
        assert (await read_info(conn)) == "read iPhone ABC"
        address = await central_address()
        code, bonds = await api("GET", "/v1/bonds")
        assert code == 200 and [b["central"] for b in bonds["bonds"]] == [address], bonds
        assert bonds["bonds"][0]["bonded"] is True, bonds
        steps.append("paired and bonded")
        await conn.disconnect()
        p.stop()

        p2, name = secure(None)  # a new gattemu on the same adapter: bluetoothd kept the keys
        await wait_for_api(p2)
        conn = await central.connect(name=name)
        assert (await read_info(conn)).startswith("refused"), "the link starts unencrypted"
        await conn.encrypt()
        assert (await read_info(conn)) == "read iPhone ABC"
        steps.append("reconnected encrypted after restart")

        code, body = await api("DELETE", f"/v1/bonds/{address}")
        assert code == 200, body
        steps.append("bond forgotten by gattemu")
        deadline = time.monotonic() + 15
        while conn.is_connected and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        conn = await central.connect(name=name)
        with pytest.raises(PairingFailed) as failed:
            await conn.encrypt()
        steps.append(f"reconnect with old keys: {failed.value}")
        assert "06" in str(failed.value) or "KEY_MISSING" in str(failed.value).upper(), failed.value
        if not conn.is_connected:
            conn = await central.connect(name=name)
        await conn.forget_keys()
        await conn.pair("KeyboardDisplay")
        assert (await read_info(conn)) == "read iPhone ABC"
        steps.append("paired again: readable")
        code, body = await api("POST", "/v1/faults", {"forgetBonds": True})
        assert code == 201, body
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            _, bonds = await api("GET", "/v1/bonds")
            if not bonds.get("bonds"):
                break
            await asyncio.sleep(0.3)
        assert bonds.get("bonds") == [], bonds
        steps.append("forgetBonds fault: no bonds left")
        report("pairing | bond lifecycle | " + " → ".join(steps))
        await logged(p2, "unpaired")
        await asyncio.sleep(0.5)
        assert [e["central"] for e in events_of(p2, "unpaired")] == [address, address]
    finally:
        await forget_everywhere(conn)
        await conn.disconnect()


@pytest.fixture(scope="module", autouse=True)
def pairing_table():
    """Prints the mode × result table of this module's run in the closing summary."""
    yield
    if TABLE:
        width = max(len(m) for m, *_ in TABLE)
        report(f"{'mode'.ljust(width)} | central io      | result | encrypt-read after")
        for mode, io, outcome, after in TABLE:
            report(f"{mode.ljust(width)} | {io.ljust(15)} | {outcome.ljust(6)} | {after}")
