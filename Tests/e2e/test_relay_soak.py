"""Soak through `gattemu relay`: sequence-numbered write commands (8 in flight) from the test central to the mirror,
forwarded to a gattemu device (benchmarks/profiles/noke-burst.json) that answers each with one notification carrying
the same number; every number must come back once, in order (benchmarks/relay_bench.py's check, as in
`scripts/bench`). GATTEMU_RELAY_SOAK_OPS sets the operations (default 400; 10,000 with GATTEMU_LONG=1)."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest

from conftest import LONG, report
from flows import NOKE_RX, NOKE_SERVICE, NOKE_TX
from test_relay import relay_adapters  # noqa: F401 - the fixture

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import relay_bench  # noqa: E402

OPS = int(os.environ.get("GATTEMU_RELAY_SOAK_OPS") or (10_000 if LONG else 400))


def events_in(path: Path) -> list[dict]:
    """A gattemu JSON event log's events (`--events`)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def sequence_numbers(path: Path, event: str, detail: str = "") -> list[int]:
    """The soak's sequence numbers (`B1 hi lo`) in the `event` events of an event log whose detail starts with
    `detail`, in the log's order: what the device received (`write`), what the relay forwarded (`relayed`)."""
    return [int(e["value"][2:6], 16) for e in events_in(path)
            if e["event"] == event and e.get("detail", "").startswith(detail)
            and e.get("value", "").startswith("b1") and len(e["value"]) == 6]


async def device_behind_relay(central, start_gattemu, start_peripheral, gattemu_bin, relay_adapters, env, tmp_path,  # noqa: F811
                              device_link: str | None = None):
    """A gattemu device running benchmarks/profiles/noke-burst.json and `gattemu relay` in front of it, its mirror seen
    advertising by the central: (device, relay, the relay's events file). With `device_link` (INTERVAL_MS/PACKETS),
    what the relay sends on its link to the device is paced so (GATTEMU_LINK_DIR, read when the link is made)."""
    upstream, mirror, mirror_address = relay_adapters
    profile = f"{env['GATTEMU_ROOT']}/benchmarks/profiles/noke-burst.json"
    device = start_gattemu(profile, args=["--allow-extends-outside", "--control", "off"])
    adv = await device.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    pace = Path(env["GATTEMU_LINK_DIR"]) / env["GATTEMU_CENTRAL2_ADDRESS"] if device_link else None
    if pace:
        pace.write_text(device_link + "\n")
    try:
        events = tmp_path / "relay-events.jsonl"
        relay = start_peripheral(
            name="relay", adapter=mirror,
            cmd=f"{gattemu_bin} relay {adv.address} --adapter {{adapter}} --upstream-adapter {upstream}",
            extra_args=["--events", str(events), "--control", "off"])
        await relay.advertising(central, address=mirror_address, service_uuid=NOKE_SERVICE)
    finally:
        if pace:
            pace.unlink(missing_ok=True)
    return device, relay, events


async def test_relay_soak_loses_and_reorders_nothing(single_att_channel, central, start_gattemu, start_peripheral, gattemu_bin,
                                                     relay_adapters, needs_separate_stack, env, tmp_path):  # noqa: F811
    mirror_address = relay_adapters[2]
    device, relay, events = await device_behind_relay(central, start_gattemu, start_peripheral, gattemu_bin, relay_adapters,
                                                      env, tmp_path)
    conn = await central.connect(mirror_address)
    q: asyncio.Queue = asyncio.Queue()
    await conn.subscribe(NOKE_TX, q.put_nowait)
    await asyncio.sleep(0.3)
    result = await relay_bench.soak(conn, NOKE_RX, q, OPS)
    await central.disconnect_all()
    assert relay.stop() == 0, relay.tail()
    device.stop()
    layers = relay_bench.relay_legs(events)["counts"]
    # The order the device itself received the numbers in: tells the relay's upstream leg from the way back.
    arrived = sequence_numbers(device.events, "write")
    received = len(arrived)
    device_order = relay_bench.sequence_check(arrived, OPS)
    assert result["ok"] and result["sent"] == OPS, (
        f"{result['sent']:,} sent, {result['received']:,} answers: {result['missing']} lost, {result['duplicates']} repeated, "
        f"{result['reordered']} reordered (first: {result['first_problem']}); the relay forwarded "
        f"{layers['soak_writes_forwarded']:,}, the device received {received:,}, {device_order['reordered']} of them "
        f"out of order (first: {device_order['first_problem']})")
    # With [GATT] Channels = 1 the relay says its write commands stay in order (and read that from bluetoothd's own
    # main.conf, the one on its command line).
    channels = [e["detail"] for e in events_in(events) if e["event"] == "note" and "ATT channel" in e.get("detail", "")]
    assert len(channels) == 1 and "opens one ATT channel per link" in channels[0], channels
    assert os.environ["GATTEMU_BLUETOOTHD_CONF"] in channels[0], channels
    report(f"relay soak: {OPS:,} sequence-numbered write commands, {result['received']:,} answers, none lost, repeated or "
           f"reordered ({result['ops_per_s']:.0f} ops/s; relay forwarded {layers['soak_writes_forwarded']:,}, "
           f"device received {received:,})")


# The device's link in the test below: btvirt's per-link pace (GATTEMU_LINK_DIR), one ACL packet per 100 ms from the
# relay's upstream controller, about 10 write commands a second; the phone's link is not paced.
DEVICE_LINK = "100/1"
BURST = int(os.environ.get("GATTEMU_RELAY_BURST_OPS") or 300)


async def test_a_phone_faster_than_the_devices_link_meets_the_relays_bound(
        single_att_channel, central, start_gattemu, start_peripheral, gattemu_bin, relay_adapters,  # noqa: F811
        needs_separate_stack, env, tmp_path):
    """Issue #42 N3: a phone that writes faster than the device's link carries. The device side's bluetoothd takes
    every Write Command at once and queues what the link cannot carry; the relay checks the link (a read the device's
    bluetoothd sends only after the commands before it) and lets at most 64 wait: the rest of the phone's burst is
    dropped and counted, what was forwarded reaches the device in order, and the commands flow again once the link
    has carried them."""
    mirror_address = relay_adapters[2]
    if not env.get("GATTEMU_LINK_DIR"):
        pytest.skip("needs the patched btvirt's per-link pace (GATTEMU_LINK_DIR)")
    device, relay, events = await device_behind_relay(central, start_gattemu, start_peripheral, gattemu_bin, relay_adapters,
                                                      env, tmp_path, device_link=DEVICE_LINK)
    conn = await central.connect(mirror_address)
    char = conn._char(NOKE_RX)

    def forwarded() -> list[int]:
        return sequence_numbers(events, "relayed", "write command sent")

    def arrived() -> list[int]:
        return sequence_numbers(device.events, "write")

    def taken() -> int:
        return len(sequence_numbers(events, "write"))

    started = time.monotonic()
    for number in range(BURST):
        await char.write_value(bytes([0xB1, number >> 8, number & 0xFF]), with_response=False)
    # Bumble queues what its controller cannot take yet: the burst has been sent once the relay has it all.
    deadline = time.monotonic() + 120
    while (n := taken()) < BURST:
        assert time.monotonic() < deadline, f"the relay took {n} of the phone's {BURST} commands"
        await asyncio.sleep(0.2)
    burst_s = time.monotonic() - started
    # The device's link carries what was forwarded: wait for the device to have it all (an event: its own log).
    while (n := len(arrived())) < len(forwarded()) or n == 0:
        assert time.monotonic() < deadline, f"the device received {n} of {len(forwarded())} forwarded commands"
        await asyncio.sleep(0.5)
    # Then the commands flow again: one more goes through once a link check has shown the others gone (until then
    # it is dropped and counted too, so it is sent again), and the count of those dropped is logged as it passes.
    extra = 0
    while 0xFFFF not in forwarded():
        assert time.monotonic() < deadline, f"{extra} commands after the device had all, none forwarded"
        await char.write_value(bytes([0xB1, 0xFF, 0xFF]), with_response=False)
        extra += 1
        again = time.monotonic() + 2
        while 0xFFFF not in forwarded() and time.monotonic() < again:
            await asyncio.sleep(0.2)
    while 0xFFFF not in arrived():
        assert time.monotonic() < deadline, "the last command did not reach the device"
        await asyncio.sleep(0.2)
    await central.disconnect_all()
    assert relay.stop() == 0, relay.tail()
    device.stop()

    details = [e.get("detail", "") for e in events_in(events)]
    first_drop = [d for d in details if d.startswith("write command dropped: ")]
    counted = [int(d.split()[0]) for d in details if d.endswith("write commands dropped while the device's link was busy")]
    checks = [d for d in details if d.startswith("link check: ")]
    sent_on, got = forwarded(), arrived()
    summary = (f"{BURST} write commands in {burst_s:.1f} s from the phone; device link {DEVICE_LINK} (ms/packets): "
               f"{len(sent_on)} forwarded, {sum(counted)} dropped in {len(counted)} episodes, {len(checks)} link checks, "
               f"{len(got)} arrived")
    # The relay drops in episodes (a phone slower than here drops, flows once a link check is answered, drops
    # again): each begins with one note and ends with one count, once a command goes through again.
    assert first_drop and all("64 write commands may still wait for the device's link" in d for d in first_drop), summary
    assert len(first_drop) == len(counted) and all(n > 0 for n in counted), f"{summary}: {first_drop} {counted}"
    # Every command is either forwarded or dropped and counted; what was forwarded arrived, in the phone's order.
    assert len(sent_on) + sum(counted) == BURST + extra, f"{summary}: {counted}, {extra} after"
    assert got == sent_on and got == sorted(got) and got[-1] == 0xFFFF, summary
    assert checks, summary
    report(f"relay bound: {summary}")
