"""End-to-end tests of the sandbox itself, against the Python fixture peripheral
(or whatever GATTEMU_PERIPHERAL_CMD starts, if it serves the same GATT layout)."""
import asyncio
import os
import time

import pytest

from conftest import LONG, bluetoothd, report
from fixtures.peripheral import (INDICATE_UUID, MANUFACTURER_DATA, MANUFACTURER_ID, NOTIFY_UUID,
                                 READ_UUID, READ_VALUE, SERVICE_UUID, WRITE_UUID)

FIND_TIMEOUT = 60


async def test_discover_by_name_and_service_uuid(central, start_peripheral):
    start_peripheral(name="fx-disc")
    adv = await central.find(name="fx-disc", timeout=FIND_TIMEOUT)
    assert SERVICE_UUID in adv.service_uuids
    assert adv.manufacturer_data.get(MANUFACTURER_ID) == MANUFACTURER_DATA
    by_uuid = await central.find(service_uuid=SERVICE_UUID, timeout=FIND_TIMEOUT)
    assert by_uuid.address == adv.address == os.environ["GATTEMU_PERIPH_ADDRESS"].upper()


async def test_read_write_notify_indicate(central, start_peripheral):
    start_peripheral(name="fx-rw")
    conn = await central.connect(name="fx-rw")
    try:
        assert conn.mtu >= 23
        if central.stack == "bumble":
            assert conn.mtu == 517
        assert SERVICE_UUID in conn.service_uuids()
        assert await conn.read(READ_UUID) == READ_VALUE

        notes: asyncio.Queue = asyncio.Queue()
        inds: asyncio.Queue = asyncio.Queue()
        await conn.subscribe(NOTIFY_UUID, notes.put_nowait)
        await conn.subscribe(INDICATE_UUID, inds.put_nowait, indicate=True)

        await conn.write(WRITE_UUID, b"\x01\x02\x03", response=True)
        assert await asyncio.wait_for(notes.get(), 15) == b"\x01\x02\x03"
        assert await asyncio.wait_for(inds.get(), 15) == b"\x01\x02\x03"

        await conn.write(WRITE_UUID, b"no-rsp", response=False)
        assert await asyncio.wait_for(notes.get(), 15) == b"no-rsp"
        assert await conn.read(WRITE_UUID) == b"no-rsp"
    finally:
        await conn.disconnect()


async def test_device_vanishes_after_peripheral_exits(central, start_peripheral):
    p = start_peripheral(name="fx-gone")
    await central.find(name="fx-gone", timeout=FIND_TIMEOUT)
    assert p.stop() == 0, p.output()
    await central.wait_gone(name="fx-gone", timeout=30)


@pytest.mark.restart
async def test_reconnect_after_peripheral_bluetoothd_restart(central, start_peripheral,
                                                             needs_separate_stack):
    p = start_peripheral(name="fx-rst")
    conn = await central.connect(name="fx-rst")
    assert await conn.read(READ_UUID) == READ_VALUE

    await asyncio.to_thread(bluetoothd, "restart")
    end = time.monotonic() + 30
    while conn.is_connected and time.monotonic() < end:
        await asyncio.sleep(0.2)
    assert not conn.is_connected, "link survived a bluetoothd restart"
    await conn.disconnect()

    # The fixture does not re-register after a restart (gattemu must): start it again.
    p.stop()
    start_peripheral(name="fx-rst2")
    conn = await central.connect(name="fx-rst2")
    try:
        assert await conn.read(READ_UUID) == READ_VALUE
    finally:
        await conn.disconnect()


@pytest.mark.soak
async def test_soak_connect_subscribe_write_notify_cycles(central, start_peripheral):
    cycles = int(os.environ.get("GATTEMU_SOAK_CYCLES") or (200 if LONG else 6))
    start_peripheral(name="fx-soak")
    before = len(central.stats.attempts)
    t0 = time.monotonic()
    for i in range(cycles):
        conn = await central.connect(name="fx-soak")  # fresh scan each time, <= 3 attempts
        try:
            notes: asyncio.Queue = asyncio.Queue()
            await conn.subscribe(NOTIFY_UUID, notes.put_nowait)
            payload = f"cycle-{i}".encode()
            await conn.write(WRITE_UUID, payload, response=True)
            assert await asyncio.wait_for(notes.get(), 15) == payload
        finally:
            await conn.disconnect()
    attempts = central.stats.attempts[before:]
    first = sum(1 for a in attempts if a == 1)
    report(f"soak fixture peripheral ({central.stack}): {cycles} cycles in {time.monotonic() - t0:.0f}s, "
          f"first-attempt success {first}/{len(attempts)} ({100 * first / len(attempts):.0f}%), "
          f"attempts per cycle {attempts}")
    assert len(attempts) == cycles and all(a >= 1 for a in attempts)


HOSTILE_RUNNER_BODIES = [
    ({"url": "http://10.0.2.2:80"}, "url"),
    ({"url": "http://127.0.0.1:1/x"}, "url"),
    ({"token": "t\r\nX-Injected: 1"}, "token"),
    ({"token": "--checks=none"}, None),  # a plain word: schemathesis gets it only inside the -H value
    ({"name": "../../etc"}, "name"),
    ({"phases": "coverage"}, "phases"),
    ({"examples": 10**6}, "examples"),
    ({"examples": True}, "examples"),
    ({"timeout": 0}, "timeout"),
]


@pytest.mark.parametrize("change, refused", HOSTILE_RUNNER_BODIES)
async def test_the_schemathesis_runner_refuses_what_is_not_a_plain_request(change, refused, tmp_path):
    """Tests/e2e/schemathesis_host.py runs a command on the host for whoever reaches its port: nothing of a body
    gets onto that command line unchecked. Checked here (argv_for) and, when the sandbox reaches the runner
    (scripts/e2e: --reach, GATTEMU_SCHEMATHESIS), through it."""
    import json
    import urllib.error
    import urllib.request

    from contract import HOST
    from schemathesis_host import Refused, argv_for
    body = {"url": "http://127.0.0.1:8774", "token": "abc", "name": "live-x", "phases": "fuzzing", **change}
    if refused is None:
        argv, _ = argv_for(body, tmp_path)
        assert f"Authorization: Bearer {body['token']}" in argv and "--checks=none" not in argv, argv
        return
    with pytest.raises(Refused, match=refused):
        argv_for(body, tmp_path)
    if HOST:
        post = urllib.request.Request(f"{HOST}/run", data=json.dumps(body).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as answer:
            await asyncio.to_thread(urllib.request.urlopen, post, timeout=30)
        assert answer.value.code == 400 and refused in json.loads(answer.value.read())["error"]
