"""A rig: several devices in one `gattemu run` (`PROFILE@ADAPTER …`), each on its own controller, one event log and
one control API. Centrals on their own controllers run the shipped profiles' app flows at the same time; the
control API lists the devices with their adapters and states and drives each under /v1/devices/{id}/; each event
names its device. A device whose adapter is not there is reported failed with the reason while the others serve;
a bluetoothd restart brings every device back; a fault on one device (the lock drops its central) leaves the other
answering.

Controllers (the sandbox's patched btvirt): the lock on GATTEMU_PERIPH and the reader on GATTEMU_CENTRAL3, both
driven by bluetoothd; the test central (GATTEMU_CENTRAL) and a second Bumble central (GATTEMU_CENTRAL2). With
GATTEMU_CONTROLLERS=7, BLEProof joins on GATTEMU_CENTRAL5 with a third central on GATTEMU_CENTRAL4."""
from __future__ import annotations

import asyncio
import json
import os
import shlex

import pytest

from central import open_central
from conftest import bluetoothd, profile_path
from controlapi import api
from flows import BLEPROOF_OK, LEAF_READER_UID, bleproof_flow, leaf_flow, leaf_parse, noke_flow


def controllers(*names: str) -> list[str] | None:
    found = [os.environ.get(name) for name in names]
    return None if not all(found) else found  # type: ignore[return-value]


async def settled(p, timeout: float = 90) -> dict:
    """`GET /v1/devices` once every device started or failed: the API answers 503 until then."""
    await p.wait_ready(timeout)
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        assert p.running, p.output()
        try:
            status, body = await api("GET", "/v1/devices")
            if status == 200:
                return body
        except Exception:  # noqa: BLE001 - the API is not listening yet
            pass
        await asyncio.sleep(0.3)
    raise AssertionError(f"the rig's devices did not settle within {timeout}s:\n{p.tail()}")


async def lock_drops_while_reader_answers(lock_central, reader_central, lock: str, reader: str,
                                          lock_address: str | None = None) -> None:
    """Across a rig's devices, from the API: a fault on the lock (`POST /v1/devices/{lock}/faults`) drops its central
    while the reader answers its own; the reader has no fault."""
    held = await noke_flow(lock_central, lambda line: print(f"lock central: {line}"), disconnect=False, address=lock_address)
    status, added = await api("POST", f"/v1/devices/{lock}/faults", {"disconnect": True, "id": "drop-lock"})
    assert status == 201, added
    await asyncio.wait_for(held.conn._disconnected.wait(), 30)
    after = await leaf_flow(reader_central, lambda line: print(f"reader central: {line}"))
    assert leaf_parse(after.certificate)["tag"] == 5, after.certificate.hex()
    status, reader_faults = await api("GET", f"/v1/devices/{reader}/faults")
    assert status == 200 and reader_faults["faults"] == [], reader_faults


async def test_a_rig_serves_each_device_to_its_own_central_at_once(central, start_peripheral, gattemu_bin, tmp_path,
                                                                 needs_separate_stack):
    layout = controllers("GATTEMU_PERIPH", "GATTEMU_CENTRAL3", "GATTEMU_CENTRAL2")
    if layout is None:
        pytest.fail("the rig test needs GATTEMU_CENTRAL2 and GATTEMU_CENTRAL3 (the sandbox's patched btvirt, 5 controllers)")
    lock_adapter, reader_adapter, second_adapter = layout
    third = controllers("GATTEMU_CENTRAL4", "GATTEMU_CENTRAL5")
    devices = [("noke-lock", lock_adapter), ("leaf-reader", reader_adapter)]
    if third:
        devices.append(("bleproof", third[1]))
    events = tmp_path / "rig-events.jsonl"
    args = [f"{profile_path(name + '.json')}@{adapter}" for name, adapter in devices]
    # A device whose adapter is not there: reported, and the others serve.
    args.append(f"{profile_path('bleproof.json')}@hci99")
    cmd = " ".join([shlex.quote(gattemu_bin), "run", *map(shlex.quote, args), "--events", shlex.quote(str(events))])
    p = start_peripheral(name="rig", cmd=cmd)
    listed = await settled(p)
    by_id = {d["id"]: d for d in listed["devices"]}
    missing = "bleproof-2" if third else "bleproof"  # a repeated profile's id gets -2
    assert list(by_id) == [name for name, _ in devices] + [missing], listed
    addresses = {os.environ[v]: os.environ.get(f"{v}_ADDRESS", "").upper()
                 for v in ("GATTEMU_PERIPH", "GATTEMU_CENTRAL3", "GATTEMU_CENTRAL5") if os.environ.get(v)}
    for name, adapter in devices:
        assert by_id[name]["state"] == "running" and by_id[name]["adapterName"] == adapter, by_id[name]
        assert by_id[name]["address"].upper() == addresses[adapter], by_id[name]
    assert by_id[missing]["state"] == "failed" and "hci99" in by_id[missing]["reason"], by_id[missing]

    second = await open_central(adapter=second_adapter, address="F0:E0:D0:00:00:02")
    others = [second]
    try:
        if third:
            others.append(await open_central(adapter=third[0], address="F0:E0:D0:00:00:04"))
        # The app flows at the same time, each central with its device; then again once bluetoothd restarted
        # (every device registers again).
        for round in ("first", "after a bluetoothd restart"):
            if round != "first":
                bluetoothd("restart")
            flows = [noke_flow(central, lambda line: print(f"lock central: {line}")),
                     leaf_flow(second, lambda line: print(f"reader central: {line}"))]
            if third:
                flows.append(bleproof_flow(others[-1], lambda line: print(f"bleproof central: {line}")))
            runs = await asyncio.gather(*flows)
            noke, leaf = runs[0], runs[1]
            assert [r[:2] for r in noke.responses] == [b"\x51\x60"], (round, [r.hex() for r in noke.responses])
            assert [leaf_parse(f)["tag"] for f in leaf.auth] == [3, 2], (round, [f.hex() for f in leaf.auth])
            certificate = leaf_parse(leaf.certificate)
            assert certificate["tag"] == 5 and certificate["value"][2:10] == LEAF_READER_UID, (round, leaf.certificate.hex())
            if third:
                assert runs[2].indications == [BLEPROOF_OK], (round, runs[2].indications)
        # Across devices, from the API: the lock drops its central while the reader answers on.
        await lock_drops_while_reader_answers(central, second, "noke-lock", "leaf-reader")
    finally:
        for c in others:
            await c.close()

    # One device driven under its path: a trigger of the reader's changes nothing of the lock's.
    status, fired = await api("POST", "/v1/devices/leaf-reader/triggers/touch", {})
    assert status == 200, fired
    status, conflict = await api("GET", "/v1/status")
    assert status == 409 and conflict["known"] == list(by_id), conflict
    status, unknown = await api("GET", "/v1/devices/door/status")
    assert status == 404, unknown
    status, page = await api("GET", "/v1/devices/noke-lock/events?limit=10000")
    assert status == 200 and page["events"] and all(e["device"] == "noke-lock" for e in page["events"]), page

    p.stop()
    lines = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    of = {name: [e for e in lines if e.get("device") == name] for name in by_id}
    assert all(e.get("device") in by_id for e in lines if e["event"] in ("write", "read", "notify", "subscribed")), \
        "every GATT operation names its device"
    assert any(e["event"] == "write" for e in of["noke-lock"]) and any(e["event"] == "write" for e in of["leaf-reader"])
    # Each central's writes reached its own device only.
    assert {e["central"] for e in of["noke-lock"] if e["event"] == "write"} == {os.environ["GATTEMU_CENTRAL_ADDRESS"].upper()}
    assert {e["central"] for e in of["leaf-reader"] if e["event"] == "write"} == \
        {os.environ["GATTEMU_CENTRAL2_ADDRESS"].upper()}
    assert any(e["event"] == "error" and "hci99" in e.get("detail", "") for e in of[missing]), of[missing]
    # In order: the lock's fault dropped its central, then the reader served its central.
    fault = next(e["seq"] for e in of["noke-lock"] if e["event"] == "fault" and "drop-lock" in e.get("detail", ""))
    dropped = next(e["seq"] for e in of["noke-lock"] if e["event"] == "disconnected" and e["seq"] > fault)
    assert any(e["event"] == "write" and e["seq"] > dropped for e in of["leaf-reader"]), "the reader answered after the lock dropped"
    for name, _ in devices:
        assert [e["event"] for e in of[name]].count("stopped") == 1, f"{name} stopped once, after SIGTERM"
        assert [e["event"] for e in of[name]].count("bluetoothd-lost") == 1, f"{name} saw bluetoothd go"
        assert any("registered again" in e.get("detail", "") for e in of[name]), f"{name} came back"
