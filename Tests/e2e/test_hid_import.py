"""A HID device imports, runs and reads back with the same table. HID over GATT has three Report characteristics
with one UUID (2A4D) in one service, and Tests/Fixtures/hid/hid-keyboard.json has two Battery services too:
gattemu runs it, the test central discovers it, reads every value and descriptor and sets the LED output
Report (the keyboard answers on both input Reports) while it records its own HCI traffic as a phone would; the
capture is imported, validated and run, and the central reads back the same table — services, characteristics,
descriptors, handles and values, the duplicates each in its place — and gets the same answers on the same
Reports."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

from central import bumble_uuid, norm_uuid
from conftest import report

PROFILE = os.path.join(os.path.dirname(__file__), "..", "Fixtures", "hid", "hid-keyboard.json")
REPORT = norm_uuid("2a4d")


async def read_back(conn) -> list[tuple]:
    """The whole table as the central sees it: (kind, UUID, handle, value) in handle order, every value and
    descriptor read (None where the attribute is not readable)."""
    peer = conn._peer
    rows = []
    for service in peer.services:
        rows.append(("service", bumble_uuid(service.uuid), service.handle, None))
        for c in service.characteristics:
            value = bytes(await asyncio.wait_for(peer.read_value(c.handle), 10)) if c.properties & 0x02 else None
            rows.append(("characteristic", bumble_uuid(c.uuid), c.handle, c.properties, value))
            await asyncio.wait_for(peer.discover_descriptors(c), 10)
            for d in c.descriptors:
                rows.append(("descriptor", bumble_uuid(d.type), d.handle, bytes(await asyncio.wait_for(peer.read_value(d.handle), 10))))
    return rows


async def caps_lock(conn, rows) -> list[tuple[int, bytes]]:
    """Subscribes to the input Reports, writes 02 (Caps Lock) to the output Report: what arrived, on which handle."""
    peer = conn._peer
    reports = [c for s in peer.services for c in s.characteristics if bumble_uuid(c.uuid) == REPORT]
    assert len(reports) == 3, rows
    received: list[tuple[int, bytes]] = []
    for c in reports:
        if c.properties & 0x10:
            await c.subscribe(lambda value, h=c.handle: received.append((h, bytes(value))))
    output = next(c for c in reports if c.properties & 0x08)
    await asyncio.wait_for(peer.write_value(output.handle, b"\x02", with_response=True), 10)
    deadline = asyncio.get_running_loop().time() + 5
    while len(received) < 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # nothing more comes
    return received


async def run_keyboard(central, start_gattemu, profile: str, name: str, capture=None):
    p = start_gattemu(profile, name=name)
    await p.advertising(central, name="GattemuKeys")
    conn = await central.connect(name="GattemuKeys")
    try:
        rows = await read_back(conn)
        answers = await caps_lock(conn, rows)
    finally:
        await conn.disconnect()
    p.stop()
    return rows, answers


async def test_hid_keyboard_imports_runs_and_reads_back_the_same_table(central, start_gattemu, gattemu_bin, tmp_path):
    capture = Path(os.environ["GATTEMU_OUT"]) / "central-hid-keyboard.btsnoop"  # checked complete on the host
    with central.record(capture, check="later"):
        rows, answers = await run_keyboard(central, start_gattemu, PROFILE, "keyboard")
    reports = [r for r in rows if r[0] == "characteristic" and r[1] == REPORT]
    assert len(reports) == 3 and len({r[2] for r in reports}) == 3, rows
    assert sorted(v for _, v in answers) == [bytes.fromhex("0000390000000000"), bytes.fromhex("e900")], answers
    assert len({h for h, _ in answers}) == 2, f"both input Reports answered, each on its own handle: {answers}"

    imported = tmp_path / "keyboard-imported.json"
    r = subprocess.run([gattemu_bin, "import", str(capture), "-o", str(imported)], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"import failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    v = subprocess.run([gattemu_bin, "validate", str(imported)], capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, v.stdout + v.stderr
    profile = json.loads(imported.read_text())
    hid = next(s for s in profile["services"] if norm_uuid(s["uuid"]) == norm_uuid("1812"))
    assert [c["id"] for c in hid["characteristics"] if norm_uuid(c["uuid"]) == REPORT] == ["report", "report_2", "report_3"]
    assert [s["id"] for s in profile["services"] if norm_uuid(s["uuid"]) == norm_uuid("180f")] == ["battery", "battery_2"]

    again, answers_again = await run_keyboard(central, start_gattemu, str(imported), "imported")
    assert again == rows, "the imported keyboard's table differs:\n" + "\n".join(
        f"{a}  |  {b}" for a, b in zip(rows, again) if a != b) + f"\nimport report:\n{r.stdout}"
    assert answers_again == answers, (answers_again, answers)
    report(f"hid import | {len(rows)} attributes read back the same ({len(reports)} Reports 2A4D, "
           f"{sum(1 for r in rows if r[0] == 'service' and r[1] == norm_uuid('180f'))} Battery services), handles pinned: "
           f"{all('handle' in s for s in profile['services'])}; Caps Lock answered on {len(answers_again)} Reports")
