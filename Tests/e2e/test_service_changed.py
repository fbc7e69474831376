"""The GATT table changing under a bonded central: gattemu adds a service through the control API, bluetoothd
sends Service Changed, and the central finds the new service when it discovers again — while connected, and
when it reconnects after a change made behind its back."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conftest import report
from controlapi import api, wait_for_api
from test_pairing import bleproof_named, forget_everywhere

UPDATE = "12345678-0000-4000-8000-0000000000aa"


def update_profile(tmp_path: Path) -> str:
    def edit(profile):
        profile["security"] = {"io": "NoInputNoOutput"}  # without an agent bluetoothd refuses bonding (Pairing Not Supported)
        profile["services"].append({"id": "update", "uuid": UPDATE, "present": False, "characteristics": [
            {"id": "image", "uuid": "12345678-0000-4000-8000-0000000000ab", "flags": ["write"]}]})
    return bleproof_named(tmp_path, "Updatable", edit)


async def changed_within(changes: list, count: int, timeout: float = 15.0) -> bool:
    end = time.monotonic() + timeout
    while len(changes) < count and time.monotonic() < end:
        await asyncio.sleep(0.1)
    return len(changes) >= count


@pytest.mark.parametrize("bluez", ["5.66", "5.82"], indirect=True)
async def test_service_changed_reaches_a_bonded_central(bluez, central, start_gattemu, tmp_path, needs_separate_stack):
    p = start_gattemu(update_profile(tmp_path), args=["--control", "127.0.0.1:8765"])
    await wait_for_api(p)
    conn = await central.connect(name="Updatable")
    steps = []
    try:
        assert UPDATE not in conn.service_uuids()
        await conn.pair("KeyboardDisplay")
        changes: list[tuple[int, int]] = []
        await conn.on_service_changed(lambda start, end: changes.append((start, end)))
        code, body = await api("PUT", "/v1/services/update", {"present": True})
        assert code == 200 and body["changed"], body
        assert await changed_within(changes, 1), "no Service Changed indication within 15 s:\n" + p.tail()
        assert UPDATE in await conn.rediscover(), "the new service after discovering again"
        steps.append(f"connected: Service Changed {changes[0][0]:#06x}–{changes[0][1]:#06x}, new service found")

        # Behind its back: the central is away while the service goes; bluetoothd tells it when it is back.
        await conn.disconnect()
        code, body = await api("PUT", "/v1/services/update", {"present": False})
        assert code == 200 and body["changed"], body
        conn = await central.connect(name="Updatable")
        await conn.encrypt()
        # It arrives during the central's connection setup (before anything subscribes): read what the link got.
        deadline = time.monotonic() + 5
        while (received := conn.service_changed_received()) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        got = received is not None
        back = [received] if got else []
        uuids = await conn.rediscover()
        assert UPDATE not in uuids, uuids
        steps.append(("reconnected (bonded): Service Changed " + (f"{back[0][0]:#06x}–{back[0][1]:#06x}" if got else "not sent")
                      + ", the service is gone after discovering again"))
        # Whether bluetoothd indicates a change made while a bonded central was away is bluetoothd's business (the
        # characteristic is its own): reported, not asserted — 5.66 and 5.82 do, once, right at connection, and a
        # connection attempt that fails after getting it leaves the next one without (docs/pairing.md). What the
        # central finds when it discovers again is gattemu's, and asserted above.
        report(f"service changed (BlueZ {bluez}) | " + " → ".join(steps))
    finally:
        if conn.is_connected:
            await forget_everywhere(conn)
        else:
            await conn.forget_keys()
        await conn.disconnect()
