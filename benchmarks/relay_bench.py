"""The relay section of bench.py: one gattemu device (noke-burst.json on $GATTEMU_PERIPH) measured directly and
through `gattemu relay` (upstream on $GATTEMU_CENTRAL2, mirror on $GATTEMU_CENTRAL3) in the same run, with the
same Bumble central on $GATTEMU_CENTRAL:

  rtt:    write -> notification round trips, p50/p99, direct and relayed (and relayed - direct)
  burst:  notifications/s the central receives, relayed / direct (the issue's line: >= 0.90)
  legs:   the relay's own leg, from its event log ("device answered the write in X ms")
  soak:   N write commands `B1 hi lo` (a 16-bit sequence number) through the relay, 8 in flight; the device
          answers each with one notification `52 hi lo`: every number must arrive once, in order. Each layer's
          count (the relay's and the device's event logs) says where an operation went missing.

See benchmarks/README.md ("The relay").
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

SEQUENCE_OPCODE = 0xB1  # a 3-byte write B1 hi lo to rx -> one notification 52 hi lo 00... (noke-burst.json, gattemu only)
SEQUENCE_ANSWER = 0x52
MIRROR_WAIT_S = 120  # the relay scans for the device, connects and walks its table before it advertises


def sequence_check(received: list[int], sent: int, modulus: int = 1 << 16) -> dict:
    """What arrived of the sequence numbers 0 ..< sent (each taken modulo `modulus`), in arrival order: counts of
    the numbers missing, repeated and arriving after a later one, and the first such problem."""
    seen: set[int] = set()
    last = -1
    missing_first = None
    duplicates = reordered = 0
    first_problem = None
    for position, number in enumerate(received):
        # Unwrap next to the last number: at most a window's worth apart.
        base = max(last, 0)
        value = base + ((number - base + modulus // 2) % modulus) - modulus // 2
        if value in seen:
            duplicates += 1
            first_problem = first_problem or f"#{position}: {value} again"
        elif value < last:
            reordered += 1
            first_problem = first_problem or f"#{position}: {value} after {last}"
        seen.add(value)
        last = max(last, value)
    unexpected = sorted(v for v in seen if not 0 <= v < sent)
    missing = [v for v in range(sent) if v not in seen]
    if missing:
        missing_first = missing[0]
        first_problem = first_problem or f"{missing_first} never arrived"
    if unexpected:
        first_problem = first_problem or f"{unexpected[0]} was never sent"
    return {"sent": sent, "received": len(received), "distinct": len(seen), "missing": len(missing),
            "first_missing": missing_first, "duplicates": duplicates, "reordered": reordered,
            "unexpected": len(unexpected), "first_problem": first_problem,
            "ok": not missing and not duplicates and not reordered and not unexpected}


def relay_legs(events: Path) -> dict:
    """The relay's own leg from its JSON event log: how long the device took to answer what the relay forwarded
    (the `relayed` events' "in X ms", in ms per kind), and the layer counts of the soak's operations."""
    kinds: dict[str, list[float]] = {"write": [], "write command": [], "read": []}
    counts = {"soak_writes_forwarded": 0, "soak_notifications_from_device": 0, "write_errors": 0}
    dropped = None
    try:
        lines = events.read_text(errors="replace").splitlines()
    except OSError:
        return {"error": f"no event log {events}"}
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        detail = str(e.get("detail", ""))
        value = str(e.get("value", "")).replace(" ", "").lower()
        if e.get("event") == "note" and "notifications dropped" in detail:
            dropped = detail
        if e.get("event") != "relayed":
            continue
        m = re.match(r"device answered the (write|read)\b.*? in ([\d.]+) ms$", detail) or \
            re.match(r"(write command) sent to the device in ([\d.]+) ms$", detail)
        if m and "error" not in detail:
            kinds[m[1]].append(float(m[2]))
        if "with error" in detail:
            counts["write_errors"] += 1
        if detail.startswith("write command sent") and value.startswith(f"{SEQUENCE_OPCODE:02x}") and len(value) == 6:
            counts["soak_writes_forwarded"] += 1
        if detail == "device notified" and value.startswith(f"{SEQUENCE_ANSWER:02x}"):
            counts["soak_notifications_from_device"] += 1
    return {"legs_ms": {k: v for k, v in kinds.items() if v}, "counts": counts, "dropped_note": dropped}


def device_counts(log: Path, start: int = 0) -> dict:
    """The soak's operations as the device logged them from byte `start` on: sequence writes received, answers notified."""
    writes = notifies = 0
    numbers: list[int] = []
    try:
        with open(log, "rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return {}
    pattern = re.compile(r"\s*[\d.]+ ms (\S+)\s+(.*)")
    written = re.compile(rf" rx {SEQUENCE_OPCODE:02x}([0-9a-f]{{4}})\b")
    for line in lines:
        m = pattern.match(line)
        if not m:
            continue
        if m[1] == "write" and (w := written.search(m[2])):
            writes += 1
            numbers.append(int(w[1], 16))
        elif m[1] == "notify" and f" tx {SEQUENCE_ANSWER:02x}" in m[2]:
            notifies += 1
    return {"soak_writes_received": writes, "soak_notifications_sent": notifies,
            "soak_writes_received_out_of_order": sequence_check(numbers, len(numbers))["reordered"]}


async def soak(conn, rx: str, q: asyncio.Queue, n: int, window: int = 8, timeout: float = 10.0) -> dict:
    """n sequence-numbered write commands to `rx` (a Bumble connection of Tests/e2e/central.py), `window` in flight;
    `q` gets the notifications of tx. Every answer is checked by `sequence_check`."""
    char = conn._char(rx)
    sem = asyncio.Semaphore(window)
    received: list[int] = []
    other = 0
    stalled = asyncio.Event()

    async def drain():
        nonlocal other
        while True:
            try:
                v = await asyncio.wait_for(q.get(), timeout)
            except asyncio.TimeoutError:
                stalled.set()
                return
            if len(v) >= 3 and v[0] == SEQUENCE_ANSWER:
                received.append(v[1] << 8 | v[2])
                sem.release()
            else:
                other += 1

    while not q.empty():
        q.get_nowait()
    t0 = time.monotonic()
    d = asyncio.ensure_future(drain())
    sent = 0
    while sent < n and not stalled.is_set():
        try:
            await asyncio.wait_for(sem.acquire(), timeout)
        except asyncio.TimeoutError:
            break
        number = sent & 0xFFFF
        await char.write_value(bytes([SEQUENCE_OPCODE, number >> 8, number & 0xFF]), with_response=False)
        sent += 1
    end = time.monotonic() + timeout
    while len(received) < sent and not stalled.is_set() and time.monotonic() < end:
        await asyncio.sleep(0.05)
    elapsed = time.monotonic() - t0
    d.cancel()
    result = sequence_check(received, sent)
    result.update({"requested": n, "window": window, "other_notifications": other,
                   "ops_per_s": len(received) / elapsed if elapsed else None, "wall_s": elapsed})
    return result
