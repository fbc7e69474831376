"""Random writes from the real central to every writable characteristic of the
three shipped profiles: random length 0-512 and content, with and without
response as the characteristic allows. gattemu must keep running, answer each
write-with-response as it logs it, and log every write with its exact bytes.

Writes without response are paced like a well-behaved central paces them (iOS's
canSendWriteWithoutResponse): after every 20, the central waits until the log
has caught up. Unpaced, a burst of thousands of commands overruns bluetoothd's
ATT socket in the kernel while bluetoothd is busy, and the kernel drops some
(about 3 % here) before any app sees them.

GATTEMU_RANDOM_WRITES sets the writes per characteristic (default 150; 10,000
with GATTEMU_LONG=1, i.e. `scripts/test --long`). The first ones have the lengths
where something changes (EDGES: empty, one byte, the default ATT MTU's 20 and 21,
and bluetoothd's limit of 510 to 512 bytes, below), so a short run has them all;
the rest are random (each edge twice where a characteristic takes both write
requests and commands: one of each).

BlueZ before 5.69 counts the 2-byte handle against the 512-byte value limit
(src/shared/gatt-server.c write_cb, fixed by 8bf3a4a "Fix not allowing valid
attribute writes"): bluetoothd 5.66 refuses 511- and 512-byte writes itself
(ATT error 0x0D for a request, silently for a command), so they never reach
gattemu. The test expects exactly that for them.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path

import pytest

from conftest import LONG, bluez_version, profile_path, report
from recording import full_uuid, read_events

WRITES = int(os.environ.get("GATTEMU_RANDOM_WRITES") or (10_000 if LONG else 150))
EDGES = [0, 1, 20, 21, 509, 510, 511, 512]
NAMES = {"noke-lock.json": {"name_prefix": "NOKE"}, "bleproof.json": {"name": "BLEProof"},
         "leaf-reader.json": {"name_prefix": "ETHS"}}


def bluez_write_limit() -> int:
    """Longest value bluetoothd hands to an app in one write: 510 before 5.69, else 512."""
    version = tuple(int(x) for x in bluez_version().split(".")[:2] if x.isdigit()) or (5, 66)
    return 510 if version < (5, 69) else 512


def writable(profile: str) -> list[tuple[str, str, list[str]]]:
    data = json.loads(Path(profile_path(profile)).read_text())
    return [(c["id"], full_uuid(c["uuid"]), c.get("flags", []))
            for s in data.get("services", []) for c in s["characteristics"]
            if {"write", "write-without-response"} & set(c.get("flags", []))]


def logged_writes(path: Path) -> int:
    return path.read_text().count('"event":"write"') if path.exists() else 0


async def caught_up(events_file: Path, expected: int, patience: float = 20.0) -> None:
    """Waits until the event log holds `expected` writes, as long as it keeps growing."""
    logged, last_progress = -1, time.monotonic()
    while logged < expected and time.monotonic() - last_progress < patience:
        now = logged_writes(events_file)
        if now > logged:
            logged, last_progress = now, time.monotonic()
        else:
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("profile", list(NAMES))
async def test_random_writes_are_all_answered_and_logged(central, start_gattemu, env, tmp_path, profile):
    seed = int(os.environ.get("GATTEMU_RANDOM_SEED") or random.randrange(1 << 32))
    rng = random.Random(seed)
    limit = bluez_write_limit()
    events_file = tmp_path / "events.jsonl"
    p = start_gattemu(profile, args=["--events", str(events_file), "--control", "off", "--seed", "1"])
    adv = await p.advertising(central, **NAMES[profile])
    conn = await central.connect(adv.address)
    sent: dict[str, list[str]] = {}
    outcomes: dict[str, list[str | None]] = {}  # per write: "success", "0x.." or None (no response asked)
    tracked: set[str] = set()  # characteristics whose writes gattemu answers (no write-without-response flag)
    started = time.monotonic()
    unpaced = 0

    def expected_logged() -> int:
        return sum(1 for v in sent.values() for x in v if len(x) // 2 <= limit)

    try:
        for char, uuid, flags in writable(profile):
            sent[char], outcomes[char] = [], []
            if "write-without-response" not in flags:
                tracked.add(char)
            for n in range(WRITES):
                assert p.running, f"gattemu exited (seed {seed}):\n{p.tail()}"
                # The edges first, once as a request and once as a command where the characteristic takes both.
                edge = n < 2 * len(EDGES)
                value = rng.randbytes(EDGES[n % len(EDGES)] if edge else rng.randint(0, 512))
                both = {"write", "write-without-response"} <= set(flags)
                response = "write" in flags and (not both or (n < len(EDGES) if edge else rng.random() < 0.5))
                sent[char].append(value.hex())
                if not response:
                    await conn.write(uuid, value, response=False)
                    outcomes[char].append(None)
                    unpaced += 1
                    if unpaced >= 20:
                        await caught_up(events_file, expected_logged())
                        unpaced = 0
                    continue
                try:
                    await conn.write(uuid, value, response=True)
                    outcomes[char].append("success")
                except Exception as error:  # noqa: BLE001 - an ATT error is an answer too
                    code = getattr(error, "error_code", None)
                    assert code is not None, f"write failed without an ATT error (seed {seed}): {error!r}"
                    outcomes[char].append(f"0x{code:02x}")
        elapsed = time.monotonic() - started
        assert conn.is_connected, f"the link dropped during the random writes (seed {seed})"
        # Writes without response may still be on their way: wait (on the link) until the log has them all.
        total = expected_logged()
        await caught_up(events_file, total)
    finally:
        await conn.disconnect()
        assert p.stop() == 0, p.tail()

    me = env["GATTEMU_CENTRAL_ADDRESS"]
    events = read_events(events_file)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    for char, all_values in sent.items():
        values = [v for v in all_values if len(v) // 2 <= limit]
        refused = [o for v, o in zip(all_values, outcomes[char]) if len(v) // 2 > limit and o is not None]
        assert all(o == "0x0d" for o in refused), (char, refused)
        logged = [e.get("value", "") for e in events
                  if e["event"] == "write" and e.get("central") == me and e.get("characteristic") == char]
        assert logged == values, (f"{char}: {len(values)} writes sent, {len(logged)} logged; first difference at "
                                  f"{next((i for i, (a, b) in enumerate(zip(logged, values)) if a != b), min(len(logged), len(values)))}"
                                  f" (seed {seed})")
        if char in tracked:
            # Reply-tracked writes: the log's answers, in order, are what the central got.
            answers = [e.get("detail", "") for e in events
                       if e["event"] == "answer" and e.get("central") == me and e.get("characteristic") == char]
            got = [o for v, o in zip(all_values, outcomes[char]) if len(v) // 2 <= limit]
            assert len(answers) == len(values), (char, len(answers), len(values), seed)
            assert [a == "success" for a in answers] == [o == "success" for o in got], (char, seed)
            assert all(a == "success" or a.startswith("error ") for a in answers), (char, set(answers))
    refused_by_bluez = sum(len(v) for v in sent.values()) - total
    report(f"random writes ({profile}, seed {seed}): {total} writes to {', '.join(sent)} in {elapsed:.0f} s, "
           f"all logged ({refused_by_bluez} over {limit} bytes refused by bluetoothd); answers {sorted(set(o for v in outcomes.values() for o in v if o)) or ['(none asked)']}")
