"""The sandbox's BlueZ versions (GATTEMU_BLUEZ, the `bluez`/`bluez_582` fixtures) and its extra
central controllers (GATTEMU_CENTRAL2..), with what differs between 5.66 and 5.82 for gattemu:
5.66 acquires ONE notification socket per characteristic, shared by every subscribed central;
5.82 calls AcquireNotify once per central (options device/mtu/link), so gattemu can notify one."""
import asyncio
import os
import re

import pytest

from central import open_central
from conftest import bluez_available, bluez_version, use_bluez
from flows import NOKE_RX, NOKE_SERVICE, NOKE_TX, NOKE_UNLOCK

DEFAULT = os.environ.get("GATTEMU_BLUEZ") or "5.66"


@pytest.mark.switches_bluez
async def test_use_bluez_switches_and_restores(central):
    if not bluez_available("5.82"):
        pytest.skip("BlueZ 5.82 not built (scripts/build-bluez)")
    assert bluez_version() == DEFAULT
    other = "5.82" if DEFAULT == "5.66" else "5.66"
    with use_bluez(other, "test_use_bluez_switches_and_restores"):
        assert bluez_version() == other
    assert bluez_version() == DEFAULT


@pytest.mark.parametrize("bluez", ["5.66", "5.82"], indirect=True)
async def test_two_centrals_acquire_notify(bluez, central, start_gattemu):
    """Two centrals subscribe to the Noke TX characteristic and the first unlocks: 5.82 calls
    AcquireNotify once per central (gattemu logs a `subscribed … AcquireNotify` per address) and the
    answer reaches the first central only; 5.66 acquires once in all and both get the answer."""
    if not os.environ.get("GATTEMU_CENTRAL2"):
        pytest.skip("no second central controller (GATTEMU_CENTRAL2)")
    p = start_gattemu("noke-lock.json")
    await p.advertising(central, service_uuid=NOKE_SERVICE)
    second = await open_central(adapter=os.environ["GATTEMU_CENTRAL2"], address="F0:E0:D0:00:00:02")
    conns = []
    try:
        got = ([], [])
        for c, inbox in ((central, got[0]), (second, got[1])):
            conn = await c.connect(name_prefix="NOKE", service_uuid=NOKE_SERVICE)
            conns.append(conn)
            await conn.subscribe(NOKE_TX, inbox.append)
        await asyncio.sleep(1.0)
        # The first central unlocks; gattemu answers on TX (to that central where BlueZ allows).
        await conns[0].write(NOKE_RX, NOKE_UNLOCK, response=True)
        for _ in range(100):
            if got[0]:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)
        out = p.output()
        acquired = re.findall(r"subscribed\s+(\S+)\s+tx AcquireNotify", out)
        notify = [line for line in out.splitlines() if re.search(r"\bnotify\s", line)]
        print(f"BlueZ {bluez}: AcquireNotify subscriptions {acquired}; central 1 got {len(got[0])}, "
              f"central 2 got {len(got[1])} notification(s); {notify}")
        assert got[0], f"the writing central got no answer; gattemu output:\n{out[-3000:]}"
        if bluez == "5.82":  # a socket per central: the answer goes to the writer only
            assert len(acquired) == 2 and len(set(acquired)) == 2, out[-3000:]
            assert not got[1], f"central 2 got {got[1]}"
        else:  # one shared socket: every subscriber gets it
            assert len(acquired) == 1, out[-3000:]
            assert got[1] == got[0], f"central 2 got {got[1]}"
    finally:
        for conn in conns:
            try:
                await conn.disconnect()
            except Exception:  # noqa: BLE001
                pass
        await second.close()
