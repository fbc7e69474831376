"""The shipped device flows with phone-like centrals:
  android  no MTU exchange (ATT MTU 23, an app that never calls requestMtu): long writes go as prepared writes,
           the device's notifications are cut to 20 bytes by BlueZ unless the characteristic `fragment`s them;
           the LEAF app calls requestMtu(517) after connecting, as its 34-byte write needs it;
  ios      MTU 185, what iOS negotiates.
gattemu logs every notification BlueZ will cut (never silently)."""
from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from conftest import report
from flows import (BLEPROOF_OK, LEAF_DATA, NOKE_UNLOCK, Inbox, bleproof_config, bleproof_flow, leaf_flow, leaf_frame,
                   leaf_parse, noke_flow)

PHONES = {"android": 0, "ios": 185}


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
    run = await leaf_flow(central, say, mtu=PHONES[phone], request_mtu=517 if phone == "android" else 0)
    assert [leaf_parse(f)["tag"] for f in run.auth] == [3, 2]
    assert leaf_parse(run.auth_result)["value"] == b"\x00"
    assert len(run.certificate) == 103 and leaf_parse(run.certificate)["tag"] == 5, run.certificate.hex()
    report(f"phone-like central | leaf | {phone} (MTU {run.mtu}) | certificate 103 bytes")


async def test_leaf_certificate_at_mtu_23_comes_in_pieces(central, start_gattemu):
    """A central that stays at MTU 23 gets the 103-byte certificate frame as 20-byte notifications (the data
    characteristic has `fragment`) and joins them by the frame's length field."""
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
        body = json.dumps({"hex": certificate.hex()}).encode()
        request = urllib.request.Request("http://127.0.0.1:8765/v1/characteristics/data/notify", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with await asyncio.to_thread(urllib.request.urlopen, request, timeout=10) as response:
            assert response.status == 200
        pieces = [await inbox.get()]
        while len(b"".join(pieces)) < 4 + int.from_bytes(pieces[0][2:4], "big"):
            pieces.append(await inbox.get())
        assert [len(x) for x in pieces] == [20, 20, 20, 20, 20, 3], [x.hex() for x in pieces]
        assert b"".join(pieces) == certificate
        out = await p.output_when(lambda o: "sent in 6 pieces" in o)
        assert "notification of 103 bytes sent in 6 pieces of at most 20 (ATT MTU 23)" in out, p.tail()
        report("phone-like central | leaf | MTU 23 | 103-byte certificate in 6 notifications, joined by its length field")
    finally:
        await conn.disconnect()
