"""The hostile profiles that validate (Tests/ProfileTests/Fixtures/hostile: regex bombs, self-doubling state and
values, huge fills, timers from absurd variables, day-long delay chains, deep JSON) run in gattemu while a central
writes to them without pause — 60 s each with --long (GATTEMU_LONG=1), 3 s each otherwise. gattemu must keep
answering, its control API must answer within a second, and its resident memory must stay under RSS_CEILING_MIB
(docs/security.md)."""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from conftest import LONG, report
from controlapi import api, wait_for_api

HOSTILE = Path(__file__).resolve().parents[1] / "ProfileTests" / "Fixtures" / "hostile"
RUNNING = ["regex-bomb", "state-doubling", "value-self-doubling", "fill-from-state", "timer-from-variables",
           "delay-chain", "json-matcher-nesting"]
SECONDS = 60 if LONG else 3
RSS_CEILING_MIB = 64
RX, BIG = "00002a19-0000-1000-8000-00805f9b34fb", "00002a1b-0000-1000-8000-00805f9b34fb"
# Writes built to trip what the profiles attack: backtracking regexes, JSON parsers, doubling templates.
PAYLOADS = [b"a" * 20 + b"!", b"x" * 19 + b"z", b"[" * 20, b'{"a":' * 4, bytes(range(20)), b"{buf}{buf}" * 2]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.parametrize("name", RUNNING)
async def test_hostile_profile_under_writes(name, central, start_gattemu, tmp_path):
    wrapper = tmp_path / f"{name}-advertised.json"
    wrapper.write_text(json.dumps({"extends": str(HOSTILE / f"{name}.json"), "advertisements": [{"localName": "Hostile"}]}))
    p = start_gattemu(str(wrapper), args=["--allow-extends-outside", "--control", "127.0.0.1:8765"])
    await wait_for_api(p)
    conn = await central.connect(name="Hostile")
    writes, errors, peak, slowest = 0, 0, rss_mib(p.proc.pid), 0.0
    try:
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            for payload in PAYLOADS:
                for uuid, response in ((RX, True), (RX, False), (BIG, True)):
                    try:
                        await asyncio.wait_for(conn.write(uuid, payload, response=response), 10)
                        writes += 1
                    except Exception:  # noqa: BLE001 - an ATT error answer is an answer
                        errors += 1
            peak = max(peak, rss_mib(p.proc.pid))
            started = time.monotonic()
            code, _ = await api("GET", "/v1/status")
            slowest = max(slowest, time.monotonic() - started)
            assert code == 200
        assert p.running, p.tail()
        assert conn.is_connected, "the central lost its link"
    finally:
        await conn.disconnect()
    report(f"hostile profile {name}: {writes} writes answered, {errors} ATT errors in {SECONDS} s; "
           f"peak RSS {peak:.1f} MiB (ceiling {RSS_CEILING_MIB}); slowest /v1/status {slowest * 1000:.0f} ms")
    assert writes > 0
    assert peak < RSS_CEILING_MIB, f"gattemu's RSS reached {peak:.1f} MiB"
    assert slowest < 1.0, f"the control API took {slowest:.2f} s"
