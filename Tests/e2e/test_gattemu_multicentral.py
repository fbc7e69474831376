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


async def wait_for_status(condition, what: str) -> dict:
    """Polls /v1/status until `condition(status)` holds (bluetoothd reports a subscription a moment
    after the central's CCC write); fails with `what` and the centrals after 10 s."""
    deadline = time.monotonic() + 10
    while not condition(status := (await api("GET", "/v1/status"))[1]) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert condition(status), f"{what}: {status['centrals']}"
    return status


async def run_centrals(start_gattemu, centrals, leave_after: int | None,
                       shared_socket: bool = False) -> tuple[list[list[bytes]], list, object]:
    """Starts the Noke lock, connects and subscribes every central, then streams: central i writes
    commands tagged 0xA0+i and waits for the answer with its tag each time; the last central
    disconnects after `leave_after` rounds (None: nobody leaves). Returns each central's
    notifications, the connections and the gattemu process.

    `shared_socket` (BlueZ before 5.70): the others subscribe only after bluetoothd has acquired the
    notification socket for the first central, so it tells gattemu of no one else; their answers
    must still reach them through that socket."""
    p = start_gattemu("noke-lock.json", args=["--control", f"127.0.0.1:{PORT}"])
    await wait_for_api(p)
    connections = []
    for c in centrals:
        adv = await p.advertising(c, name_prefix="NOKE")
        connections.append(await c.connect(adv.address))
    inboxes: list[list[bytes]] = [[] for _ in centrals]
    first_address = None
    for index, (conn, inbox) in enumerate(zip(connections, inboxes)):
        await conn.subscribe(NOKE_TX, inbox.append)
        if shared_socket and index == 0:
            status = await wait_for_status(lambda s: any(c["subscriptions"] == ["tx"] for c in s["centrals"]),
                                           "the first central never showed as subscribed")
            first_address = next(c["address"] for c in status["centrals"] if c["subscriptions"] == ["tx"])
            # gattemu lists the subscription when bluetoothd asks for the socket, before bluetoothd has the answer: a
            # central subscribing meanwhile makes bluetoothd ask again, for it (seen: a second AcquireNotify 56 ms
            # later). A notification through the socket shows bluetoothd holds it.
            await conn.write(NOKE_RX, command(0xA0), response=True)
            deadline = time.monotonic() + 10
            while not any(v[2] == 0xA0 for v in inbox) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert any(v[2] == 0xA0 for v in inbox), "the first central's answer never came through the socket"
    await asyncio.sleep(1)
    for inbox in inboxes:
        inbox.clear()
    if shared_socket:
        status = await wait_for_status(lambda s: len(s["centrals"]) == len(centrals), "not every central connected")
        late = [c for c in status["centrals"] if c["address"] != first_address]
        assert all(c["subscriptions"] == [] for c in late), f"BlueZ told gattemu of a later subscriber: {late}"
    else:
        await wait_for_status(lambda s: len(s["centrals"]) == len(centrals) and all(
            c["subscriptions"] == ["tx"] and c.get("mtu") for c in s["centrals"]), "not every central subscribed")

    async def stream(index: int, rounds: int, leave: bool) -> None:
        tag = 0xA0 + index
        for n in range(rounds):
            await connections[index].write(NOKE_RX, command(tag), response=True)
            deadline = time.monotonic() + 10
            while sum(1 for v in inboxes[index] if v[2] == tag) <= n and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert sum(1 for v in inboxes[index] if v[2] == tag) > n, f"central {index}: no answer to write {n + 1}"
        if leave:
            await connections[index].disconnect()

    last = len(centrals) - 1
    await asyncio.gather(*(stream(i, leave_after if (i == last and leave_after) else ROUNDS, i == last and leave_after is not None)
                           for i in range(len(centrals))))
    await asyncio.sleep(1)
    return inboxes, connections, p


@pytest.mark.switches_bluez
async def test_each_central_gets_only_its_own_answers(central, more_centrals, start_gattemu):
    """BlueZ 5.82: one AcquireNotify socket per central, so "notify the event's central" reaches it alone."""
    centrals = [central, *more_centrals]
    connections = []
    with use_bluez("5.82", "test_each_central_gets_only_its_own_answers"):
        try:
            inboxes, connections, p = await run_centrals(start_gattemu, centrals, leave_after=None)
            for index, inbox in enumerate(inboxes):
                tags = {value[2] for value in inbox}
                assert tags == {0xA0 + index}, f"central {index} got answers for {sorted(map(hex, tags))}"
                assert len(inbox) == ROUNDS and all(v[:2] == b"\x51\x60" for v in inbox), (index, len(inbox))
            _, events = await api("GET", "/v1/events?since=0&limit=10000")
            notifies = [e.get("detail", "") for e in events["events"] if e["event"] == "notify"]
            assert len(notifies) == ROUNDS * len(centrals)
            assert all(d.startswith("AcquireNotify socket /org/bluez/") and "," not in d for d in notifies), notifies[:5]
            report(f"multi-central (BlueZ 5.82): {len(centrals)} centrals x {ROUNDS} concurrent write->notify, "
                   f"each got only its own {ROUNDS} answers")
        finally:
            for conn in connections:
                await conn.disconnect()


async def test_one_central_leaving_mid_stream_does_not_disturb_the_others(central, more_centrals, start_gattemu):
    """BlueZ 5.66 (the default): the shared notification socket reaches every subscriber, also those
    bluetoothd never told gattemu of (it calls AcquireNotify for the first subscriber only), each
    answer is written once, and one central leaving halfway leaves the others' links and answers alone.

    Not on 5.82: there bluetoothd closes another central's socket when one disconnects (ccc_write_cb in
    src/gatt-database.c clears the first socket of the queue, whichever central it belongs to; still so
    in BlueZ master); gattemu then logs that central as unsubscribed and does not send its answers to
    anyone else."""
    centrals = [central, *more_centrals]
    connections = []
    try:
        inboxes, connections, p = await run_centrals(start_gattemu, centrals, leave_after=ROUNDS // 2, shared_socket=True)
        for index, inbox in enumerate(inboxes):
            own = [v for v in inbox if v[2] == 0xA0 + index]
            rounds = ROUNDS // 2 if index == len(centrals) - 1 else ROUNDS
            assert len(own) == rounds, f"central {index}: {len(own)} own answers for {rounds} writes"
        assert all(conn.is_connected for conn in connections[:-1])
        _, status = await api("GET", "/v1/status")
        assert len(status["centrals"]) == len(centrals) - 1, status["centrals"]
        assert status["centrals"][0]["subscriptions"] == ["tx"], status["centrals"]
        _, events = await api("GET", "/v1/events?since=0&limit=10000")
        sockets = {e.get("detail", "") for e in events["events"] if e["event"] == "notify"}
        assert len(sockets) == 1 and next(iter(sockets)).startswith("AcquireNotify socket /org/bluez/"), sockets
        report(f"multi-central (BlueZ 5.66): {len(centrals)} centrals streaming, one left after {ROUNDS // 2} rounds, "
               f"the others got all {ROUNDS} answers each")
    finally:
        for conn in connections:
            await conn.disconnect()
