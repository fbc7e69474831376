"""Core GATT behaviour of gattemu against a real bluetoothd and a real central (Tests/e2e/profiles/core.json):
the longest value, notifications/indications over both of BlueZ's paths (AcquireNotify sockets and
PropertiesChanged), and the order of a burst over two characteristics."""
import asyncio
import json
import os
import re

import pytest

PROFILE = os.path.join(os.path.dirname(__file__), "profiles", "core.json")
SERVICE = "7a5e0001-0000-4000-8000-00000000c0de"
LONG, ECHO, QUIET, CONFIRM, BURST = (SERVICE.replace("0001-", f"000{n}-", 1) for n in (2, 3, 4, 5, 6))
# What the rule on BURST notifies, in order, on echo and quiet in turn (core.json).
with open(PROFILE) as profile:
    BURST_VALUES = [bytes.fromhex(step["value"]["hex"]) for rule in json.load(profile)["rules"] if rule["id"] == "burst"
                    for step in rule["do"]]
LONG_VALUE = "".join(f"{i:03d}|" for i in range(128)).encode()


async def wait_for(predicate, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_longest_value_is_read_whole(central, start_gattemu):
    """A 512-byte value (the ATT maximum) reaches the central intact.

    BlueZ 5.66 forwards each Read Blob as ReadValue with an offset (covered on a private bus by
    BlueZTests.readsAndWritesCarryOffsetMTUAndCentral). Here the Bumble central keeps MTU 517 even when a
    smaller one is requested, so the value arrives in one read; see the note on issue 2."""
    p = start_gattemu(PROFILE)
    await p.advertising(central, name="GattemuCore")
    conn = await central.connect(name="GattemuCore")
    try:
        value = await conn.read(LONG)
        assert bytes(value) == LONG_VALUE
    finally:
        await conn.disconnect()
    out = await p.output_when(lambda o: re.search(r"answer\s+\S+ long 3030307c", o))
    assert re.search(r"answer\s+\S+ long 3030307c", out), out[-3000:]


@pytest.mark.parametrize("path", ["acquire", "properties"])
async def test_notifications_and_indications_on_both_paths(central, start_gattemu, path):
    p = start_gattemu(PROFILE, args=["--notify-path", path])
    await p.advertising(central, name="GattemuCore")
    conn = await central.connect(name="GattemuCore")
    try:
        echoed, quiet, confirmed = [], [], []
        await conn.subscribe(ECHO, lambda b: echoed.append(bytes(b)))
        await conn.subscribe(QUIET, lambda b: quiet.append(bytes(b)))
        await conn.subscribe(CONFIRM, lambda b: confirmed.append(bytes(b)), indicate=True)
        for i in range(3):
            await conn.write(ECHO, bytes([0xE0, i]), response=True)
            await conn.write(QUIET, bytes([0xC0, i]), response=False)
            await conn.write(CONFIRM, bytes([0x1D, i]) * 100, response=True)
        assert await wait_for(lambda: len(echoed) == 3 and len(quiet) == 3 and len(confirmed) == 3), (echoed, quiet, confirmed)
        assert echoed == [bytes([0xE0, i]) for i in range(3)]
        assert quiet == [bytes([0xC0, i]) for i in range(3)]
        assert confirmed == [bytes([0x1D, i]) * 100 for i in range(3)]
    finally:
        await conn.disconnect()
    out = await p.output_when(lambda o: len(re.findall(r" confirmed\s+confirm", o)) >= 3)
    expected = "AcquireNotify socket" if path == "acquire" else "PropertiesChanged"
    notify_lines = [line for line in out.splitlines() if re.search(r" notify\s+(\S+ )?(echo|quiet) ", line)]
    assert len(notify_lines) == 6 and all(expected in line for line in notify_lines), notify_lines
    # Indications always travel as PropertiesChanged and the central's confirmation comes back as Confirm().
    assert len(re.findall(r" indicate\s+\S+ confirm ", out)) == 3, out[-3000:]
    assert len(re.findall(r" confirmed\s+confirm", out)) == 3, out[-3000:]


async def test_a_burst_over_two_characteristics_arrives_in_the_rules_order(central, start_gattemu):
    """A rule that notifies on two characteristics in turn (as a recorded device answered, and as a relayed device
    does) reaches the central in the rule's order. Each characteristic has its own AcquireNotify socket, which
    bluetoothd reads when it gets to it: a real capture's burst replayed A, A, B where the device had sent A, B, A."""
    p = start_gattemu(PROFILE, args=["--notify-path", "acquire"])
    await p.advertising(central, name="GattemuCore")
    conn = await central.connect(name="GattemuCore")
    rounds = 10
    got: list[bytes] = []
    try:
        await conn.subscribe(ECHO, lambda b: got.append(bytes(b)))
        await conn.subscribe(QUIET, lambda b: got.append(bytes(b)))
        for _ in range(rounds):
            mark = len(got)
            await conn.write(BURST, b"\x01", response=True)
            assert await wait_for(lambda: len(got) - mark >= len(BURST_VALUES)), [g.hex() for g in got[mark:]]
    finally:
        await conn.disconnect()
    expected = BURST_VALUES * rounds
    out_of_order = [(n // len(BURST_VALUES), g.hex(), e.hex()) for n, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert got == expected, f"{len(out_of_order)} of {len(expected)} out of place (round, got, expected): {out_of_order[:8]}"
