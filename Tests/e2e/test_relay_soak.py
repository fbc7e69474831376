"""Soak through `gattemu relay`: sequence-numbered write commands (8 in flight) from the test central to the mirror,
forwarded to a gattemu device (benchmarks/profiles/noke-burst.json) that answers each with one notification carrying
the same number; every number must come back once, in order (benchmarks/relay_bench.py's check, as in
`scripts/bench`). GATTEMU_RELAY_SOAK_OPS sets the operations (default 400; 10,000 with GATTEMU_LONG=1)."""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from conftest import LONG, report
from flows import NOKE_RX, NOKE_SERVICE, NOKE_TX
from test_relay import relay_adapters  # noqa: F401 - the fixture

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import relay_bench  # noqa: E402

OPS = int(os.environ.get("GATTEMU_RELAY_SOAK_OPS") or (10_000 if LONG else 400))


async def test_relay_soak_loses_and_reorders_nothing(single_att_channel, central, start_gattemu, start_peripheral, gattemu_bin,
                                                     relay_adapters, needs_separate_stack, env, tmp_path):  # noqa: F811
    upstream, mirror, mirror_address = relay_adapters
    profile = f"{env['GATTEMU_ROOT']}/benchmarks/profiles/noke-burst.json"
    device = start_gattemu(profile, args=["--allow-extends-outside", "--control", "off"])
    adv = await device.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    events = tmp_path / "relay-events.jsonl"
    relay = start_peripheral(
        name="relay", adapter=mirror,
        cmd=f"{gattemu_bin} relay {adv.address} --adapter {{adapter}} --upstream-adapter {upstream}",
        extra_args=["--events", str(events), "--control", "off"])
    await relay.advertising(central, address=mirror_address, service_uuid=NOKE_SERVICE)
    conn = await central.connect(mirror_address)
    q: asyncio.Queue = asyncio.Queue()
    await conn.subscribe(NOKE_TX, q.put_nowait)
    await asyncio.sleep(0.3)
    result = await relay_bench.soak(conn, NOKE_RX, q, OPS)
    await central.disconnect_all()
    assert relay.stop() == 0, relay.tail()
    device.stop()
    layers = relay_bench.relay_legs(events)["counts"]
    device_log = [json.loads(line) for line in device.events.read_text().splitlines() if line.startswith("{")]
    # The order the device itself received the numbers in: tells the relay's upstream leg from the way back.
    arrived = [int(e["value"][2:6], 16) for e in device_log
               if e["event"] == "write" and e.get("value", "").startswith("b1") and len(e["value"]) == 6]
    received = len(arrived)
    device_order = relay_bench.sequence_check(arrived, OPS)
    assert result["ok"] and result["sent"] == OPS, (
        f"{result['sent']:,} sent, {result['received']:,} answers: {result['missing']} lost, {result['duplicates']} repeated, "
        f"{result['reordered']} reordered (first: {result['first_problem']}); the relay forwarded "
        f"{layers['soak_writes_forwarded']:,}, the device received {received:,}, {device_order['reordered']} of them "
        f"out of order (first: {device_order['first_problem']})")
    # With [GATT] Channels = 1 the relay says its write commands stay in order (and read that from bluetoothd's own
    # main.conf, the one on its command line).
    relay_log = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    channels = [e["detail"] for e in relay_log if e["event"] == "note" and "ATT channel" in e.get("detail", "")]
    assert len(channels) == 1 and "opens one ATT channel per link" in channels[0], channels
    assert os.environ["GATTEMU_BLUETOOTHD_CONF"] in channels[0], channels
    report(f"relay soak: {OPS:,} sequence-numbered write commands, {result['received']:,} answers, none lost, repeated or "
           f"reordered ({result['ops_per_s']:.0f} ops/s; relay forwarded {layers['soak_writes_forwarded']:,}, "
           f"device received {received:,})")
