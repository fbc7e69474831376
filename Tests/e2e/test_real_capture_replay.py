"""Real phones' captures of real devices, replayed in the sandbox: each capture under $GATTEMU_REAL_CAPTURES (a
directory the VM can read, e.g. under out/) is imported, the profile runs in gattemu, and the test central writes
what the phone wrote, in the recorded order, to the same ATT handles (the import pins them); after each write the
notifications and indications the device sent before the phone's next write must arrive, byte for byte. What was
recorded is read with tshark (the oracle), not from the profile.

The licensed captures are in Tests/Fixtures/real-captures, the others stay outside: `scripts/check-import --replay DIR`
copies them into out/ and runs this file in the sandbox. Where the import cannot pin the device's handles, each
handle's characteristic is found in gattemu's table by the UUIDs tshark's dissection gives it (or by the
placeholder UUID naming it, where the capture has no discovery). Writes to BlueZ's own services are not replayed.
A device the phone wrote nothing to (it discovered the services and left) is found by its advertisement and its
table discovered: every service the phone saw must be there.

The device replayed is the one the phone exchanged most ATT PDUs with, a peer with no address (a log begun
mid-connection, an ATT-only export) as `connection N`; GATTEMU_REPLAY_DEVICES=all (scripts/test --full) replays every
one. What tshark says was recorded, and the profile each device imports to, are worked out on the host before the VM
boots (replay_plan.py, the oracle)."""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from central import bumble_uuid
from conftest import LONG, report
from replay_plan import DIRECTORY, capture_files, decoded, plan_for

CAPTURES = [Path(p) for p in capture_files([DIRECTORY])]
# Some captures are firmware uploads of thousands of writes: the first ones are replayed (GATTEMU_REPLAY_WRITES;
# 120 a device, 300 with --long).
MAX_WRITES = int(os.environ.get("GATTEMU_REPLAY_WRITES") or (300 if LONG else 120))


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name for p in CAPTURES])
async def test_real_capture_replays_byte_for_byte(capture, central, start_gattemu, gattemu_bin, tmp_path, env):
    plan, made = plan_for(capture, gattemu_bin, os.environ.get("GATTEMU_REPLAY_DEVICES") == "all")
    if not plan["devices"]:
        report(f"real capture | {capture.name} | no connection with ATT traffic: nothing to replay")
        return
    mismatches: list[str] = []
    for index, device in enumerate(plan["devices"]):
        assert "import_failed" not in device, f"{device['device']}: {device['import_failed']}"
        if device["skip"]:
            report(f"real capture | {capture.name} | {device['device']}: {device['skip']}")
            continue
        profile_path = tmp_path / f"imported-{index}.json"
        profile_path.write_text(json.dumps(device["profile"]))
        run = replay_discovery if device.get("services") else replay
        mismatches += [f"{device['device']}: {m}" for m in await run(capture, device, profile_path, made, central,
                                                                     start_gattemu, env)]
    assert not mismatches, "\n".join(mismatches[:20])


async def replay_discovery(capture: Path, device: dict, profile_path: Path, made: str, central, start_gattemu,
                           env) -> list[str]:
    """A device the phone only discovered (connected, read its services, left): runs the imported profile, finds it
    by what it advertises, connects and discovers; each service the phone saw must be in the table. The mismatches."""
    p = start_gattemu(str(profile_path), name="replayed")
    await p.wait_ready(60)
    advertised = [u for a in device["profile"].get("advertisements", []) for u in a.get("serviceUUIDs", [])]
    try:
        adv = await central.find(service_uuid=advertised[0], timeout=30) if advertised else None
        conn = await central.connect(address=adv.address if adv else env["GATTEMU_PERIPH_ADDRESS"])
        try:
            table = set(conn.service_uuids())
        finally:
            await conn.disconnect()
    finally:
        p.stop()
    missing = [uuid for uuid in device["services"] if uuid not in table]
    report(f"real capture | {capture.name} | {device['device']} ({device['how']}): "
           f"{len(device['services']) - len(missing)} of {len(device['services'])} services found"
           + (f" by its advertised {advertised[0]}" if advertised else "") + f" (oracle {made})")
    return [f"the phone discovered service {uuid}; gattemu's table has {sorted(table)}" for uuid in missing]


async def replay(capture: Path, device: dict, profile_path: Path, made: str, central, start_gattemu, env) -> list[str]:
    """Runs the device's imported profile (at `profile_path`) and replays the phone's writes to it: the mismatches."""
    address, how = device["device"], device["how"]
    values, cccds, timeline = decoded(device)
    writes = [e for e in timeline if e[0] == "write" and (e[1] in values or e[1] in cccds)]
    p = start_gattemu(str(profile_path), name="replayed")
    await p.wait_ready(60)
    periph = env["GATTEMU_PERIPH_ADDRESS"]
    conn = await central.connect(address=periph)
    received: list[tuple[int, bytes]] = []
    try:
        peer = conn._peer
        # The device's handle → the handle gattemu's characteristic has on air (the same when bluetoothd took the
        # pinned handles; found by service and characteristic UUID otherwise). Received values are noted under
        # the device's handle.
        on_air: dict[int, int] = {}
        occurrences: dict[tuple[str, str], list] = {}
        for service in peer.services:
            for c in service.characteristics:
                occurrences.setdefault((bumble_uuid(service.uuid), bumble_uuid(c.uuid)), []).append(c)
        for device_handle, (service_uuid, char_uuid, occurrence) in values.items():
            found = occurrences.get((service_uuid, char_uuid), [])
            if occurrence < len(found):
                on_air[device_handle] = found[occurrence]
        for device_handle, c in on_air.items():
            if c.properties & 0x30:
                try:
                    await c.subscribe(lambda value, h=device_handle: received.append((h, bytes(value))),
                                      prefer_notify=bool(c.properties & 0x10))
                except Exception:  # noqa: BLE001 - refused (encryption): what it would have sent shows as missing below
                    pass
        expected_total = matched = replayed = 0
        mismatches: list[str] = []
        index = 0
        while index < len(timeline):
            event = timeline[index]
            index += 1
            if event[0] != "write" or not (event[1] in values or event[1] in cccds):
                continue
            _, handle, value, with_response, frame = event
            if replayed >= MAX_WRITES:
                break
            # What the device sent after this write, before the phone's next write.
            expected = []
            for later in timeline[index:]:
                if later[0] == "write":
                    break
                if later[1] in values:
                    expected.append((later[1], later[2]))
            if handle in cccds:
                continue  # the central subscribed to everything at the start
            mark = len(received)
            try:
                if handle not in on_air:
                    mismatches.append(f"frame {frame}: the device's handle {handle:#06x} has no characteristic in gattemu's table")
                    continue
                await asyncio.wait_for(peer.write_value(on_air[handle].handle, value, with_response=with_response), 10)
            except Exception as error:  # noqa: BLE001 - an ATT error the device also answered is a faithful replay
                if expected:
                    mismatches.append(f"frame {frame}: write {value.hex()} failed: {error}")
                continue
            replayed += 1
            expected_total += len(expected)
            deadline = asyncio.get_running_loop().time() + 3
            while len(received) - mark < len(expected) and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)
            got = received[mark:]
            # In order, byte for byte; a timer of the profile may add its own in between (unsolicited ones).
            position = 0
            for item in expected:
                while position < len(got) and got[position] != item:
                    position += 1
                if position < len(got):
                    matched += 1
                    position += 1
                else:
                    mismatches.append(f"frame {frame}: after write {value.hex()[:40]} expected {item[1].hex()[:40]} on "
                                      f"{item[0]:#06x}, got {[g[1].hex()[:40] for g in got][:4]}")
                    break
            await asyncio.sleep(0.05)
    finally:
        await conn.disconnect()
        p.stop()
    report(f"real capture | {capture.name} | {address} ({how}): {replayed} of {len(writes)} writes replayed, {matched}/{expected_total} "
           f"notifications and indications byte for byte" + (f"; {len(mismatches)} mismatches" if mismatches else "")
           + f" (oracle {made})")
    return mismatches
