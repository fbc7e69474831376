"""Real phones' captures of real devices, replayed in the sandbox: each capture under $GATTEMU_REAL_CAPTURES (a
directory the VM can read, e.g. under out/) is imported, the profile runs in gattemu, and the test central writes
what the phone wrote, in the recorded order, to the same ATT handles (the import pins them); after each write the
notifications and indications the device sent before the phone's next write must arrive, byte for byte. What was
recorded is read with tshark (the oracle), not from the profile.

The licensed captures are in Tests/Fixtures/real-captures, the others stay outside: `scripts/check-import --replay DIR`
copies them into out/ and runs this file in the sandbox. Where the import cannot pin the device's handles, each
handle's characteristic is found in gattemu's table by the UUIDs tshark's dissection gives it (or by the
placeholder UUID naming it, where the capture has no discovery). Writes to BlueZ's own services are not replayed.

The device replayed is the one the phone exchanged most ATT PDUs with, a peer with no address (a log begun
mid-connection, an ATT-only export) as `connection N`; GATTEMU_REPLAY_DEVICES=all replays every one."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from central import bumble_uuid, norm_uuid
from conftest import report

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from capture_files import capture_files, listed_peers  # noqa: E402 - as scripts/check-import decides
from tshark_gatt import declared_characteristics, discovered_table, peer_at, peers_by_handle, sent, streamed, unknown  # noqa: E402 - as scripts/check-import reads it

# The licensed captures kept in the repository, unless GATTEMU_REAL_CAPTURES names another directory.
DIRECTORY = Path(os.environ.get("GATTEMU_REAL_CAPTURES") or Path(__file__).resolve().parents[1] / "Fixtures" / "real-captures")
CAPTURES = [Path(p) for p in capture_files([DIRECTORY])]
PHONE_WRITES = {0x12: "request", 0x52: "command"}
# Some captures are firmware uploads of thousands of writes: the first ones are replayed (GATTEMU_REPLAY_WRITES).
MAX_WRITES = int(os.environ.get("GATTEMU_REPLAY_WRITES", "300"))
DEVICE_SENDS = {0x1B: "notification", 0x1D: "indication"}
PLACEHOLDER_SUFFIX = "-0000-4000-8000-67617474656d"  # the import's UUIDs for undiscovered handles (docs/import.md)


def tshark_uuid(text: str) -> str:
    """tshark's `btatt.*uuid16` ("0xfff0") or `*uuid128` (bytes as displayed, most significant first)."""
    if text.startswith("0x"):
        return norm_uuid(text[2:])
    u = text.replace(":", "")
    return norm_uuid(f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}")


def recorded(capture: Path, peer: str | int) -> tuple[list[tuple], dict[int, tuple]]:
    """The phone's writes (joined long writes) and the device's notifications and indications on the links to
    `peer`, in order: ("write", handle, value, with_response, frame) and ("sent", handle, value, frame). `peer` is an
    address (a link's, by tshark or by its connection event), or for a peer the capture has no address for, the HCI
    handle of its link (`gattemu import --list` names it) while no connection event gives that handle an address.
    The values are the ATT PDUs' bytes as tshark frames them (`-x`): its GATT dissectors decode some values
    into their own fields (Nordic UART as text, CCCDs as bits), leaving no `btatt.value`.
    Also what tshark's dissection says each handle is, from the discovery it followed: handle → ("value",
    service UUID, characteristic UUID) or ("descriptor", descriptor UUID)."""
    def first(value):
        return value[0] if isinstance(value, list) and value and isinstance(value[0], (list, str)) else value

    out, prepared, names = [], [], {}
    links = peers_by_handle(capture)
    # Only the PDUs used below, streamed: a big capture's JSON does not fit in the VM's memory at once.
    used = " || ".join(f"btatt.opcode == {code:#04x}" for code in sorted({*PHONE_WRITES, *DEVICE_SENDS, 0x0A, 0x16, 0x18}))
    for packet in streamed(capture, used, "frame packetlogger bthci_acl btatt", raw=True):
        layers = packet["_source"]["layers"]
        acl = layers.get("bthci_acl", {})
        frame = int(first(layers["frame"]["frame.number"]))
        ends = {str(first(acl.get(f"bthci_acl.{end}.bd_addr", ""))).lower() for end in ("src", "dst")}
        ends = {end for end in ends if not unknown(end)}
        link = int(first(acl.get("bthci_acl.chandle", "0x0")), 16)
        if not ends and (address := peer_at(links, link, frame)):
            ends = {address.lower()}
        if isinstance(peer, int):
            if ends or link != peer:
                continue
        elif peer.lower() not in ends:
            continue
        raw = first(layers.get("btatt_raw"))
        if not raw:
            continue
        pdu = bytes.fromhex(raw[0] if isinstance(raw, list) else raw)
        # Every PDU used here names a handle, but Execute Write: opcode and flags, two bytes (a long write's end).
        if len(pdu) < (2 if pdu[:1] == b"\x18" else 3):
            continue
        code, handle = pdu[0], int.from_bytes(pdu[1:3], "little")
        tree = first(layers.get("btatt", {}).get("btatt.handle_tree", {}))  # a list where a PDU names several
        tree = tree if isinstance(tree, dict) else {}
        service = first(tree.get("btatt.service_uuid128") or tree.get("btatt.service_uuid16") or "")
        own = first(tree.get("btatt.uuid128") or tree.get("btatt.uuid16") or "")
        if code not in PHONE_WRITES and code not in DEVICE_SENDS and code not in (0x0A, 0x16):
            pass  # no handle in bytes 1-2 (responses, discovery requests)
        elif service and own and (tree.get("btatt.characteristic_uuid128") or tree.get("btatt.characteristic_uuid16")
                                  or tshark_uuid(own).startswith("000029")):  # 0x29xx: descriptors by their type
            names.setdefault(handle, ("descriptor", tshark_uuid(own)))
        elif service and own:
            names.setdefault(handle, ("value", tshark_uuid(service), tshark_uuid(own)))
        # Who sent it: btsnoop's direction flag or PacketLogger's record type (tshark_gatt.sent).
        sent_by_phone = sent(layers)
        if sent_by_phone and code in PHONE_WRITES:
            out.append(("write", handle, pdu[3:], code == 0x12, frame))
        elif sent_by_phone and code == 0x16 and len(pdu) >= 5:
            prepared.append((handle, int.from_bytes(pdu[3:5], "little"), pdu[5:], frame))
        elif sent_by_phone and code == 0x18:
            if prepared and pdu[1] == 0x01:  # execute (0x00 cancels)
                joined = b"".join(v for _, _, v, _ in sorted(prepared, key=lambda p: p[1]))
                out.append(("write", prepared[0][0], joined, True, prepared[0][3]))
            prepared = []
        elif not sent_by_phone and code in DEVICE_SENDS:
            out.append(("sent", handle, pdu[3:], frame))
    return out, names


def handles_by_uuid(names: dict[int, tuple], table: list) -> tuple[dict[int, tuple[str, str, int]], dict[int, int]]:
    """For a profile without pinned handles: the device's value handles by what tshark's dissection says they are
    (service UUID, characteristic UUID, occurrence in handle order), and its CCCD handles (→ 0). The occurrence
    counts every characteristic the device's discovery in the capture (`table`) shows, used or not, so the third
    HID Report stays the third, and those tshark names from the traffic without that discovery (a phone that
    discovered on an earlier connection, as the pongbot captures)."""
    known = {handle: (name[1], name[2]) for handle, name in names.items() if name[0] == "value"}
    known.update({handle: (service, char) for service, chars in table for char, _, handle in chars if handle is not None})
    values, seen = {}, {}
    for handle in sorted(known):
        key = known[handle]
        seen[key] = seen.get(key, -1) + 1
        values[handle] = (*key, seen[key])
    cccds = {handle: 0 for handle, name in names.items() if name[0] == "descriptor" and name[1] == norm_uuid("2902")}
    return values, cccds


def pinned_handles(profile: dict) -> tuple[dict[int, tuple[str, str, int]], dict[int, int]]:
    """The device's value handles the profile pins, each with (service UUID, characteristic UUID, occurrence),
    and CCCD handle → value handle for those that notify or indicate."""
    values, cccds, seen = {}, {}, {}
    for service in profile.get("services", []):
        for c in service.get("characteristics", []):
            key = (norm_uuid(service["uuid"]), norm_uuid(c["uuid"]))
            seen[key] = seen.get(key, -1) + 1
            if "handle" not in c:
                continue
            values[c["handle"]] = (*key, seen[key])
            if {"notify", "indicate"} & set(c.get("flags", [])):
                cccds[c["handle"] + 1] = c["handle"]
    return values, cccds


def placeholder_handles(profile: dict, declared: list) -> dict[int, tuple[str, str, int]]:
    """The characteristics the import put in its placeholder service (their service's discovery is not in the
    capture): one with a placeholder UUID `0000HHHH-0000-4000-8000-67617474656d` (docs/import.md) names the device's
    handle HHHH; one with its own UUID has the value handle of its declaration in the capture (`declared`, as
    tshark_gatt.declared_characteristics gives them), by occurrence of that UUID."""
    values, seen = {}, {}
    by_uuid: dict[str, list[int]] = {}
    for uuid, _, handle in declared:
        if handle is not None:
            by_uuid.setdefault(norm_uuid(uuid), []).append(handle)
    for service in profile.get("services", []):
        if not norm_uuid(service["uuid"]).endswith(PLACEHOLDER_SUFFIX):
            continue
        for c in service.get("characteristics", []):
            uuid = norm_uuid(c["uuid"])
            seen[uuid] = seen.get(uuid, -1) + 1
            if uuid.endswith(PLACEHOLDER_SUFFIX):
                values[int(uuid[:8], 16)] = (norm_uuid(service["uuid"]), uuid, seen[uuid])
            elif seen[uuid] < len(by_uuid.get(uuid, [])):
                values[by_uuid[uuid][seen[uuid]]] = (norm_uuid(service["uuid"]), uuid, seen[uuid])
    return values


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name for p in CAPTURES])
async def test_real_capture_replays_byte_for_byte(capture, central, start_gattemu, gattemu_bin, tmp_path, env):
    # The device the phone talked to most (as scripts/check-import picks it), or with GATTEMU_REPLAY_DEVICES=all
    # every device it exchanged ATT PDUs with.
    listing = subprocess.run([gattemu_bin, "import", str(capture), "--list"], capture_output=True, text=True, timeout=300)
    # A peer with no address (a capture begun mid-connection, an ATT-only export) is `connection N`, on an HCI handle.
    connected = [(pdus, device, who) for pdus, links, device, who in listed_peers(listing.stdout) if links > 0 and pdus > 0]
    if not connected:
        report(f"real capture | {capture.name} | no connection with ATT traffic: nothing to replay")
        return
    devices = [(device, who) for _, device, who in sorted(connected, key=lambda c: c[0], reverse=True)]
    mismatches: list[str] = []
    for index, (device, who) in enumerate(devices if os.environ.get("GATTEMU_REPLAY_DEVICES") == "all" else devices[:1]):
        mismatches += [f"{device}: {m}" for m in await replay(capture, device, who, tmp_path / f"imported-{index}.json",
                                                                 central, start_gattemu, gattemu_bin, env)]
    assert not mismatches, "\n".join(mismatches[:20])


async def replay(capture: Path, device: str, who: str | int, profile_path: Path, central, start_gattemu, gattemu_bin,
                 env) -> list[str]:
    """Imports `device` (`who`: its address, or its link's HCI handle) from `capture`, runs the profile and replays
    the phone's writes to it: the mismatches."""
    r = subprocess.run([gattemu_bin, "import", str(capture), "-o", str(profile_path), "--timing", "immediate", "--device", device],
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"import failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    address = device
    profile = json.loads(profile_path.read_text())
    values, cccds = pinned_handles(profile)
    timeline, names = recorded(capture, who)
    how = "pinned handles"
    if not values:
        # BlueZ cannot lay the table out with the device's handles: find each handle's characteristic in gattemu's
        # table by the UUIDs tshark's dissection gives it, or by the placeholder UUID naming its handle when the
        # capture has no discovery.
        table_of = who if isinstance(who, str) else None
        values, cccds = handles_by_uuid(names, discovered_table(capture, table_of))
        values.update(placeholder_handles(profile, declared_characteristics(capture, table_of)))
        how = "handles not pinned, characteristics found by UUID"
        if not values:
            report(f"real capture | {capture.name} | {address}: handles not pinned and tshark names none: not replayed")
            return []
    writes = [e for e in timeline if e[0] == "write" and (e[1] in values or e[1] in cccds)]
    if not writes:
        report(f"real capture | {capture.name} | {address}: no write to the device's own characteristics: nothing to replay")
        return []

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
           f"notifications and indications byte for byte" + (f"; {len(mismatches)} mismatches" if mismatches else ""))
    return mismatches
