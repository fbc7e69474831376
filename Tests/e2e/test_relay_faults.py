"""Faults on relayed traffic: `gattemu relay` in front of a gattemu Noke lock, faults installed through the relay's
control API. Device→phone: notification and read answers dropped, delayed, truncated, corrupted, duplicated,
reordered, rewritten, refused with an ATT error; phone→device: the written bytes corrupted and rewritten before they
reach the device (the device's own event log shows what it got), and the central disconnected after a write — the
relay's link to the device staying up throughout."""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from controlapi import api, wait_for_api
from conftest import report
from test_relay import CASES, SEED, relay_adapters  # noqa: F401 - the fixture

PORT = 8766
RX = "1bc50002-0200-d29e-e511-446c609db825"
TX = "1bc50003-0200-d29e-e511-446c609db825"
SESSION = "1bc50004-0200-d29e-e511-446c609db825"
# The mirror's ids: the relay's profile names characteristics after their UUIDs.
TX_ID, RX_ID, SESSION_ID = "char_1bc50003", "char_1bc50002", "char_1bc50004"


def command(tag: int) -> bytes:
    """A Noke command; the lock profile answers 51 60 <byte 2> and zeros to 20 bytes."""
    return bytes.fromhex("0000") + bytes([tag]) + bytes.fromhex("0081e628151d34af9c8878e4efbb84311d")


def answer(tag: int) -> bytes:
    return bytes([0x51, 0x60, tag]) + bytes(17)


@pytest.mark.usefixtures("relay_single_att_channel")
async def test_each_fault_kind_acts_on_relayed_traffic_in_both_directions(
        central, start_gattemu, start_peripheral, gattemu_bin, relay_adapters, needs_separate_stack, tmp_path):
    _, _, mirror_address = relay_adapters
    device = start_gattemu("noke-lock.json", args=["--seed", SEED])
    adv = await device.advertising(central, **CASES["noke"])
    relay = start_peripheral(
        name="relay", adapter=relay_adapters[1],
        cmd=f"{gattemu_bin} relay {adv.address} --adapter {{adapter}} --upstream-adapter {relay_adapters[0]}",
        extra_args=["--control", f"127.0.0.1:{PORT}", "--events", str(tmp_path / "relay.jsonl")])
    await wait_for_api(relay, timeout=120, port=PORT)

    async def add(fault: dict) -> None:
        status, body = await api("POST", "/v1/faults", fault, port=PORT)
        assert status == 201, (fault, body)

    async def clear() -> None:
        assert (await api("DELETE", "/v1/faults", port=PORT))[0] == 200

    conn = await central.connect(mirror_address)
    try:
        received: asyncio.Queue[bytes] = asyncio.Queue()
        await conn.subscribe(TX, received.put_nowait)

        async def drain(count: int, within: float = 10.0) -> list[bytes]:
            got, end = [], time.monotonic() + within
            while len(got) < count and time.monotonic() < end:
                try:
                    got.append(await asyncio.wait_for(received.get(), max(0.1, end - time.monotonic())))
                except asyncio.TimeoutError:
                    break
            await asyncio.sleep(0.5)
            while not received.empty():
                got.append(received.get_nowait())
            return got

        await conn.write(RX, command(0xA0), response=True)
        assert await drain(1) == [answer(0xA0)], "the relay passes the device's answer unchanged without faults"

        # Device → phone: notifications.
        for fault in ({"on": "notify", "characteristic": TX_ID, "nth": 1, "truncate": 2},
                      {"on": "notify", "characteristic": TX_ID, "nth": 2, "corrupt": {"at": 1, "hex": "ee"}},
                      {"on": "notify", "characteristic": TX_ID, "nth": 3, "duplicate": True},
                      {"on": "notify", "characteristic": TX_ID, "nth": 4, "reorder": True},
                      {"on": "notify", "characteristic": TX_ID, "nth": 6, "drop": True},
                      {"on": "notify", "characteristic": TX_ID, "nth": 7,
                       "rewrite": {"match": {"hex": "60 a7"}, "replace": {"utf8": "Z"}}},
                      {"on": "notify", "characteristic": TX_ID, "nth": 8, "delay": "1500ms"}):
            await add(fault)
        for tag in range(0xA1, 0xA8):
            await conn.write(RX, command(tag), response=True)
            await asyncio.sleep(0.3)
        got = await drain(7)
        assert got == [answer(0xA1)[:2], bytes([0x51, 0xEE, 0xA2]) + bytes(17), answer(0xA3), answer(0xA3),
                       answer(0xA5), answer(0xA4), b"\x51Z" + bytes(17)], [g.hex() for g in got]
        sent = time.monotonic()
        await conn.write(RX, command(0xA8), response=True)
        assert await drain(1, within=10) == [answer(0xA8)]
        delayed = time.monotonic() - sent
        assert delayed >= 1.4, delayed
        await clear()

        # Device → phone: read answers.
        plain = await conn.read(SESSION)
        await add({"on": "read", "characteristic": SESSION_ID, "truncate": 3, "count": 1})
        assert await conn.read(SESSION) == plain[:3]
        await add({"on": "read", "characteristic": SESSION_ID, "error": "0x81", "count": 1})
        with pytest.raises(Exception) as refused:
            await conn.read(SESSION)
        assert "0x81" in str(refused.value).lower() or "129" in str(refused.value) \
            or getattr(refused.value, "error_code", None) == 0x81, refused.value
        assert await conn.read(SESSION) == plain, "count 1: the next read is the device's again"
        await clear()

        # Phone → device: the written bytes changed before the device gets them.
        await add({"on": "write", "characteristic": RX_ID, "corrupt": {"at": 2, "hex": "ee"}, "count": 1})
        await conn.write(RX, command(0xB1), response=True)
        await add({"on": "write", "characteristic": RX_ID, "rewrite": {"match": {"hex": "b2"}, "replace": {"hex": "c3"}},
                   "count": 1})
        await conn.write(RX, command(0xB2), response=True)
        assert await drain(2) == [answer(0xEE), answer(0xC3)]
        device_writes = [json.loads(line) for line in device.events.read_text().splitlines()]
        got_by_device = [e["value"] for e in device_writes if e["event"] == "write" and e.get("characteristic") == "rx"]
        assert got_by_device[-2:] == [command(0xEE).hex(), command(0xC3).hex()], got_by_device

        # The central disconnected after a write; the relay's link to the device stays.
        await add({"on": "write", "characteristic": RX_ID, "disconnect": True, "count": 1})
        await conn.write(RX, command(0xB3), response=True)
        for _ in range(100):
            if not conn.is_connected:
                break
            await asyncio.sleep(0.1)
        assert not conn.is_connected
        _, events = await api("GET", "/v1/events?since=0", port=PORT)
        kinds = [e["event"] for e in events["events"]]
        assert "device-lost" not in kinds, "a fault on the phone's link must not take the device's"
        fired = [e for e in events["events"] if e["event"] == "fault"]
        assert len(fired) == 12, fired
    finally:
        if conn.is_connected:
            await conn.disconnect()
    report(f"relay faults: {len(fired)} faults fired on relayed traffic (notify: truncate, corrupt, duplicate, reorder, "
           f"drop, rewrite, delay {delayed:.1f} s; read: truncate, error 0x81; write: corrupt, rewrite, disconnect), "
           "each seen by the central or the device")
