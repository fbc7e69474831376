"""gattemu serving profiles/noke-lock.json, driven the way the Noke Android app does."""
import asyncio
import os
import time

import pytest

from conftest import LONG, report
from flows import (NOKE_RX, NOKE_SERVICE, NOKE_SESSION, NOKE_TX, NOKE_UNLOCK, Inbox, noke_flow)

PROFILE = "noke-lock.json"


def noke_name(code: str = "3E") -> str:
    return f"NOKE{code}_" + os.environ["GATTEMU_PERIPH_ADDRESS"].replace(":", "").upper()


def say(line):
    print(f"central: {line}")


async def test_noke_advertisement(central, start_gattemu):
    p = start_gattemu(PROFILE)
    adv = await p.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    assert adv.name == noke_name("3E")
    assert len(adv.name) == 19
    assert adv.address == os.environ["GATTEMU_PERIPH_ADDRESS"].upper()
    # [lockState << 5 = 2 << 5][firmware major 2][firmware minor 10][auto-unlock u16le 0]
    assert adv.manufacturer_data.get(0xFFFF) == bytes([0x40, 0x02, 0x0A, 0x00, 0x00]), \
        adv.manufacturer_data


async def test_noke_android_flow(central, start_gattemu):
    p = start_gattemu(PROFILE)
    await p.advertising(central, name=noke_name())
    run = await noke_flow(central, say)
    assert run.adv.name == noke_name()
    assert len(run.session) == 20, run.session.hex()
    assert int.from_bytes(run.session[2:4], "little") == 2820  # batteryMillivolts, 0x0B04
    assert run.session[2:4] == b"\x04\x0b"
    assert len(run.responses) == 1, [r.hex() for r in run.responses]
    r = run.responses[0]
    assert len(r) == 20, r.hex()
    assert r[:3] == bytes([0x51, 0x60, NOKE_UNLOCK[2]]), r.hex()
    assert r[3:] == bytes(17), r.hex()
    # gattemu logs each GATT operation; the write's bytes appear in hex in its output.
    out = (await p.output_when(lambda o: NOKE_UNLOCK.hex() in o.lower().replace(" ", ""))).lower()
    assert NOKE_UNLOCK.hex() in out.replace(" ", "").replace(":", ""), p.tail()


async def test_noke_gap_name_is_device_name(central, start_gattemu):
    """The GAP Device Name a central reads is the adapter Alias, which gattemu sets."""
    p = start_gattemu(PROFILE)
    await p.advertising(central, name=noke_name())
    conn = await central.connect(name=noke_name())
    try:
        assert await conn.read("2a00") == noke_name().encode()
    finally:
        await conn.disconnect()


async def test_noke_malformed_write_and_second_connection(central, start_gattemu):
    p = start_gattemu(PROFILE)
    await p.advertising(central, name=noke_name())
    conn = await central.connect(name=noke_name())
    try:
        s1 = await conn.read(NOKE_SESSION)
        tx = Inbox("TX", say)
        await conn.subscribe(NOKE_TX, tx)
        await conn.write(NOKE_RX, bytes.fromhex("0102030405"), response=True)
        r = await tx.get()
        assert len(r) == 20 and r[:2] == b"\x51\x62" and r[2:] == bytes(18), r.hex()
        await tx.expect_none(1.0)
        # 20-byte command (any bytes) -> success with its byte 2 echoed
        cmd = bytes(range(0x10, 0x24))
        await conn.write(NOKE_RX, cmd, response=False)
        r = await tx.get()
        assert len(r) == 20 and r[:3] == bytes([0x51, 0x60, cmd[2]]), r.hex()
    finally:
        await conn.disconnect()

    conn = await central.connect(name=noke_name())
    try:
        s2 = await conn.read(NOKE_SESSION)
        assert len(s2) == 20 and s2[2:4] == b"\x04\x0b", s2.hex()
        assert s2 != s1, "session must be regenerated per connection"
        tx = Inbox("TX", say)
        await conn.subscribe(NOKE_TX, tx)
        await conn.write(NOKE_RX, NOKE_UNLOCK, response=True)
        r = await tx.get()
        assert r[:3] == bytes([0x51, 0x60, NOKE_UNLOCK[2]]) and len(r) == 20, r.hex()
    finally:
        await conn.disconnect()


async def test_noke_set_hardware_code(central, start_gattemu):
    p = start_gattemu(PROFILE, "variables.hardwareCode=2P")
    adv = await p.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    assert adv.name == noke_name("2P")


async def test_noke_set_result_invalid_key(central, start_gattemu):
    p = start_gattemu(PROFILE, "variables.result=invalid-key")
    await p.advertising(central, name=noke_name())
    run = await noke_flow(central, say)
    assert [r.hex() for r in run.responses] == [(b"\x51\x61" + bytes(18)).hex()]


@pytest.mark.soak
async def test_noke_soak_cycles(central, start_gattemu):
    """Stability: scan -> connect -> subscribe -> write -> notification -> disconnect."""
    cycles = int(os.environ.get("GATTEMU_SOAK_CYCLES") or (200 if LONG else 6))
    p = start_gattemu(PROFILE)
    await p.advertising(central, name=noke_name())
    before = len(central.stats.attempts)
    t0 = time.monotonic()
    for i in range(cycles):
        conn = await central.connect(name=noke_name())
        try:
            tx: asyncio.Queue = asyncio.Queue()
            await conn.subscribe(NOKE_TX, tx.put_nowait)
            cmd = bytes([0, 0, i & 0xFF]) + bytes(17)
            await conn.write(NOKE_RX, cmd, response=True)
            r = await asyncio.wait_for(tx.get(), 15)
            assert r[:3] == bytes([0x51, 0x60, i & 0xFF]) and len(r) == 20, (i, r.hex())
        finally:
            await conn.disconnect()
    attempts = central.stats.attempts[before:]
    first = sum(1 for a in attempts if a == 1)
    report(f"soak gattemu/noke ({central.stack}): {cycles} cycles in {time.monotonic() - t0:.0f}s, "
          f"first-attempt success {first}/{len(attempts)} ({100 * first / len(attempts):.0f}%), "
          f"attempts per cycle {attempts}")
    assert p.running, p.tail()
