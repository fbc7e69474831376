"""Several centrals on one emulated Noke lock at once, each on its own btvirt
controller with its own Bumble stack: each subscribes, streams commands and
must get only the answers to its own commands (the profile notifies "the
event's central"); one leaves mid-stream without disturbing the others.

Targeting one central needs BlueZ's per-device AcquireNotify sockets (newer
than 5.66, which shares one socket per characteristic among all subscribers),
so the test runs on the sandbox's BlueZ 5.82 (`use_bluez`).
"""
from __future__ import annotations

import asyncio
import os
import time

import pytest

from central import open_central
from conftest import report, use_bluez
from flows import NOKE_RX, NOKE_TX, NOKE_UNLOCK
from test_gattemu_faults import PORT, api, wait_for_api

ROUNDS = 40


def command(tag: int) -> bytes:
    """The unlock command with byte 2 = tag; the lock echoes byte 2 in its 51 60 answer."""
    return NOKE_UNLOCK[:2] + bytes([tag]) + NOKE_UNLOCK[3:]


@pytest.fixture
async def more_centrals(central):
    extra = [(os.environ.get(f"GATTEMU_CENTRAL{i}"), f"F0:E0:D0:00:00:0{i}") for i in (2, 3)]
    if not all(adapter for adapter, _ in extra):
        pytest.skip("needs GATTEMU_CENTRAL2 and GATTEMU_CENTRAL3 (more btvirt controllers)")
    opened = []
    try:
        for adapter, address in extra:
            opened.append(await open_central(adapter=adapter, address=address))
        yield opened
    finally:
        for c in opened:
            await c.close()


async def test_three_centrals_each_get_only_their_own_answers(central, more_centrals, start_gattemu):
    centrals = [central, *more_centrals]
    with use_bluez("5.82", "test_three_centrals_each_get_only_their_own_answers"):
        p = start_gattemu("noke-lock.json", args=["--control", f"127.0.0.1:{PORT}"])
        await wait_for_api(p)
        connections = []
        try:
            for c in centrals:
                adv = await p.advertising(c, name_prefix="NOKE")
                connections.append(await c.connect(adv.address))
            inboxes: list[list[bytes]] = [[] for _ in centrals]
            for conn, inbox in zip(connections, inboxes):
                await conn.subscribe(NOKE_TX, inbox.append)
            await asyncio.sleep(1)
            for inbox in inboxes:
                inbox.clear()
            _, status = await api("GET", "/v1/status")
            assert len(status["centrals"]) == 3, status["centrals"]
            assert all(c["subscriptions"] == ["tx"] and c["mtu"] for c in status["centrals"]), status["centrals"]

            async def stream(index: int, conn, rounds: int, leave: bool = False) -> None:
                tag = 0xA0 + index
                for n in range(rounds):
                    expected = n + 1
                    await conn.write(NOKE_RX, command(tag), response=True)
                    deadline = time.monotonic() + 10
                    while len(inboxes[index]) < expected and time.monotonic() < deadline:
                        await asyncio.sleep(0.02)
                    assert len(inboxes[index]) >= expected, f"central {index}: no answer to write {n + 1}"
                if leave:
                    await conn.disconnect()

            # The third central leaves halfway while the others keep streaming.
            await asyncio.gather(stream(0, connections[0], ROUNDS), stream(1, connections[1], ROUNDS),
                                 stream(2, connections[2], ROUNDS // 2, leave=True))
            await asyncio.sleep(1)
            for index, inbox in enumerate(inboxes):
                tags = {value[2] for value in inbox}
                rounds = ROUNDS // 2 if index == 2 else ROUNDS
                assert tags == {0xA0 + index}, f"central {index} got answers for {sorted(map(hex, tags))}"
                assert len(inbox) == rounds, f"central {index}: {len(inbox)} answers for {rounds} writes"
                assert all(value[:2] == b"\x51\x60" for value in inbox)
            assert connections[0].is_connected and connections[1].is_connected
            _, status = await api("GET", "/v1/status")
            assert len(status["centrals"]) == 2, status["centrals"]
            _, events = await api("GET", "/v1/events?since=0&limit=10000")
            notifies = [e for e in events["events"] if e["event"] == "notify"]
            assert all("AcquireNotify socket /" in e.get("detail", "") and e["detail"].count(",") == 0 for e in notifies), \
                [e.get("detail") for e in notifies][:5]
            report(f"multi-central: 3 centrals, {sum(map(len, inboxes))} answers, each only its own; "
                   f"one left after {ROUNDS // 2} rounds, the other two went on to {ROUNDS}")
        finally:
            for conn in connections:
                await conn.disconnect()
