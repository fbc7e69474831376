"""The shipped device flows with phone-like centrals:
  android  no MTU exchange (ATT MTU 23, an app that never calls requestMtu): long writes go as prepared writes,
           the device's notifications are cut to 20 bytes by BlueZ unless the characteristic `fragment`s them;
           the LEAF app calls requestMtu(200) after connecting, as the LEAF Android SDK does (its 34-byte write needs it);
  ios      MTU 185, what iOS negotiates; once bonded it keeps the device's GATT table and reconnects without
           discovering (encrypting at once), and discovers again only after a Service Changed indication.
gattemu logs every notification BlueZ will cut (never silently)."""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from conftest import report
from controlapi import api
from flows import (BLEPROOF_OK, LEAF_ANDROID_MTU, LEAF_DATA, NOKE_UNLOCK, Inbox, bleproof_config, bleproof_flow, leaf_flow, leaf_frame,
                   leaf_parse, noke_flow)
from test_pairing import PORT, forget_everywhere

PHONES = {"android": 0, "ios": 185}
ROOT = Path(os.environ.get("GATTEMU_ROOT", Path(__file__).resolve().parents[2]))


def say(line):
    print(f"central: {line}")


def operation_mtus(peripheral, kinds=("read", "write", "answer")) -> list:
    """The `mtu` of each of these operations in gattemu's --events file (JSON lines)."""
    events = [json.loads(line) for line in peripheral.events.read_text().splitlines() if line.startswith("{")]
    return [e.get("mtu") for e in events if e["event"] in kinds]


def notes(peripheral) -> list[str]:
    return [line for line in peripheral.output().splitlines() if " note " in line]


@pytest.mark.parametrize("phone", list(PHONES))
async def test_noke_with_a_phone(phone, central, start_gattemu):
    p = start_gattemu("noke-lock.json")
    await p.advertising(central, name_prefix="NOKE")
    run = await noke_flow(central, say, mtu=PHONES[phone])
    assert run.mtu == (PHONES[phone] or 23)
    assert len(run.session) == 20 and len(run.responses) == 1
    assert run.responses[0][:3] == bytes([0x51, 0x60, NOKE_UNLOCK[2]]), run.responses[0].hex()
    report(f"phone-like central | noke | {phone} (MTU {run.mtu}) | unlock answered 0x60")


@pytest.mark.parametrize("phone", list(PHONES))
async def test_bleproof_with_a_phone(phone, central, start_gattemu):
    p = start_gattemu("bleproof.json")
    await p.advertising(central, name="BLEProof")
    write = bleproof_config("1")
    run = await bleproof_flow(central, say, writes=[write], mtu=PHONES[phone])
    assert run.info == b"iPhone ABC"
    if phone == "android":
        # The 140-byte write went as prepared writes; the device's 38-byte indication does not fit MTU 23: BlueZ
        # sends its first 20 bytes (as with the real device), and gattemu says so.
        assert run.mtu == 23
        assert run.indications == [BLEPROOF_OK[:20]], run.indications
        out = await p.output_when(lambda o: "BlueZ sends only the first 20 bytes" in o)
        assert "indication of 38 bytes is longer than ATT MTU 23" in out, p.tail()
    else:
        assert run.mtu == 185 and run.indications == [BLEPROOF_OK]
    # The event log records the MTU each operation ran at.
    await asyncio.sleep(0.5)  # the events file is written at most 50 ms after each event
    mtus = operation_mtus(p)
    assert mtus and set(mtus) == {run.mtu}, mtus
    report(f"phone-like central | bleproof | {phone} (MTU {run.mtu}) | 140-byte write → indication {len(run.indications[0])} bytes"
           f" | {len(mtus)} reads, writes and answers logged at MTU {run.mtu}")


@pytest.mark.parametrize("phone", list(PHONES))
async def test_leaf_with_a_phone(phone, central, start_gattemu):
    p = start_gattemu("leaf-reader.json")
    await p.advertising(central, name_prefix="ETHS")
    run = await leaf_flow(central, say, mtu=PHONES[phone], request_mtu=LEAF_ANDROID_MTU if phone == "android" else 0)
    assert [leaf_parse(f)["tag"] for f in run.auth] == [3, 2]
    assert leaf_parse(run.auth_result)["value"] == b"\x00"
    assert len(run.certificate) == 103 and leaf_parse(run.certificate)["tag"] == 5, run.certificate.hex()
    report(f"phone-like central | leaf | {phone} (MTU {run.mtu}) | certificate 103 bytes")


async def test_leaf_certificate_at_mtu_23_comes_in_pieces(central, start_gattemu):
    """A central that stays at MTU 23 gets the 103-byte certificate frame as 18-byte notifications (the data
    characteristic has `fragment`: pieces of MTU − 5, which fit a BlueZ central's Multiple Handle Value Notifications
    too) and joins them by the frame's length field."""
    p = start_gattemu("leaf-reader.json", args=["--control", "127.0.0.1:8765"])
    await p.advertising(central, name_prefix="ETHS")
    conn = await central.connect(name_prefix="ETHS", mtu=0)
    try:
        assert conn.mtu == 23
        inbox = Inbox("data", say)
        await conn.subscribe(LEAF_DATA, inbox)
        await asyncio.sleep(0.5)
        certificate = leaf_frame(5, 9, bytes(range(98)))
        assert len(certificate) == 103
        status, answer = await api("POST", "/v1/characteristics/data/notify", {"hex": certificate.hex()})
        assert status == 200, answer
        pieces = [await inbox.get()]
        while len(b"".join(pieces)) < 4 + int.from_bytes(pieces[0][2:4], "big"):
            pieces.append(await inbox.get())
        assert [len(x) for x in pieces] == [18, 18, 18, 18, 18, 13], [x.hex() for x in pieces]
        assert b"".join(pieces) == certificate
        out = await p.output_when(lambda o: "sent in 6 pieces" in o)
        assert "notification of 103 bytes sent in 6 pieces of at most 18 (ATT MTU 23 − 5" in out, p.tail()
        report("phone-like central | leaf | MTU 23 | 103-byte certificate in 6 notifications, joined by its length field")
    finally:
        await conn.disconnect()


def bondable(tmp_path: Path, profile: str) -> str:
    """The shipped profile with just-works bonding added (without a `security` section gattemu registers no agent
    and bluetoothd refuses to bond), as a file; the device is otherwise the shipped one."""
    data = json.loads((ROOT / "profiles" / profile).read_text())
    data.pop("$schema", None)
    data.setdefault("security", {"io": "NoInputNoOutput"})
    path = tmp_path / f"bondable-{profile}"
    path.write_text(json.dumps(data))
    return str(path)


async def run_shipped_flow(device: str, central):
    """The device's app flow at iOS's MTU, with the assertions of the phone tests above; returns its summary."""
    if device == "noke":
        run = await noke_flow(central, say, mtu=185)
        assert run.responses and run.responses[-1][:3] == bytes([0x51, 0x60, NOKE_UNLOCK[2]]), run.responses
        return "unlock answered 0x60"
    if device == "bleproof":
        run = await bleproof_flow(central, say, writes=[bleproof_config("1")], mtu=185)
        assert run.info == b"iPhone ABC" and run.indications == [BLEPROOF_OK], run
        return "140-byte write → ok indication"
    run = await leaf_flow(central, say, mtu=185)
    assert [leaf_parse(f)["tag"] for f in run.auth] == [3, 2] and len(run.certificate) == 103, run
    return "certificate 103 bytes"


SHIPPED = {"noke": ("noke-lock.json", {"name_prefix": "NOKE"}), "bleproof": ("bleproof.json", {"name": "BLEProof"}),
           "leaf": ("leaf-reader.json", {"name_prefix": "ETHS"})}


@pytest.mark.parametrize("device", list(SHIPPED))
async def test_ios_reconnects_on_its_cached_table(device, central, start_gattemu, tmp_path, needs_separate_stack):
    """The iOS-like central bonds on its first connection and keeps the table. It reconnects, encrypts and runs the
    app flow on the cached handles without a single discovery request. gattemu restarts (a new registration: the
    handles move); bluetoothd tells the bonded central with Service Changed when it is back, the central discovers
    again, and the flow passes on the new handles — a phone that ignored Service Changed would write to the old
    ones."""
    profile, match = SHIPPED[device]
    path = bondable(tmp_path, profile)
    cache = central.keep_gatt_cache()
    conn = None
    steps = []
    try:
        p = start_gattemu(path, args=["--control", f"127.0.0.1:{PORT}"])
        await p.advertising(central, **match)
        conn = await central.connect(mtu=185, **match)
        await conn.pair("KeyboardDisplay")
        address = conn.adv.address
        table = cache.get(address)
        assert table is not None and table.service_changed, "the central keeps the bonded device's table"
        before = table.handles()
        await conn.disconnect()
        steps.append(f"bonded, table of {len(before)} characteristics kept")

        result = await run_shipped_flow(device, central)
        conn = central.last_connection
        assert conn.from_cache and conn.encrypted, "the reconnection used the cached table on an encrypted link"
        assert conn.discovery_requests == 0, f"discovery requests on a cached reconnection: {conn.requests}"
        steps.append(f"reconnected on the cache ({len(conn.requests)} ATT requests, none discovering): {result}")

        p.stop()
        p = start_gattemu(path, args=["--control", f"127.0.0.1:{PORT}"])
        await p.advertising(central, **match)
        result = await run_shipped_flow(device, central)
        conn = central.last_connection
        after = cache[address].handles()
        moved = sorted(u for u in before if before[u] != after.get(u))
        changes = ", ".join(f"{a:#06x}–{b:#06x}" for a, b in table.changes) or "none"
        if moved:
            assert table.changes, f"handles moved ({moved}) but no Service Changed reached the bonded central"
            assert not conn.from_cache and conn.discovery_requests > 0, "Service Changed: discovered again"
        late = (f" (Service Changed came after {conn.retried_after_service_changed} request(s) on moved handles: "
                "retried on the new table)") if conn.retried_after_service_changed else ""
        steps.append(f"gattemu restarted: Service Changed {changes}, {len(moved)} handles moved, "
                     f"{'discovered again' if not conn.from_cache else 'cache still right'}{late}: {result}")
        report(f"phone-like central | {device} | ios (MTU 185, cached table) | " + " → ".join(steps))
        # The bond is forgotten on a live link, as the other pairing tests do: once bluetoothd 5.66 died when its keys
        # were removed 300 ms after the central's link went down (the next test found no bluetoothd).
        conn = await central.connect(mtu=185, **match)
    finally:
        central.gatt_cache = None
        if conn is not None:
            await forget_everywhere(conn)
            await conn.disconnect()
