"""The oracle of the e2e replay of real captures (test_real_capture_replay.py): for each capture, the device or
devices to replay, the profile `gattemu import` makes of each, and from tshark's dissection (not from the profile)
what the phone wrote and what the device sent after each write, with the device's handles mapped to
characteristics.

Made where it is cheapest: scripts/e2e runs this file on the host before the VMs boot (tshark and Python run
natively; under TCG tshark took ~10 s to start and its JSON minutes to read: the replay test's time was mostly this),
into a folder the VM reads (GATTEMU_REPLAY_PLANS). The test makes a plan itself, with the same code, for a capture
the folder has none of (or one of other bytes).

  python3 Tests/e2e/replay_plan.py --out DIR --gattemu BIN [--all-devices] [CAPTURE_DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "scripts"))
from central import norm_uuid  # noqa: E402 - stdlib only at import
from capture_files import capture_files, listed_peers  # noqa: E402 - as scripts/check-import decides
from tshark_gatt import declared_characteristics, discovered_table, peer_at, peers_by_handle, sent, streamed, unknown  # noqa: E402 - as scripts/check-import reads it

# The licensed captures kept in the repository, unless GATTEMU_REAL_CAPTURES names another directory.
DIRECTORY = Path(os.environ.get("GATTEMU_REAL_CAPTURES") or HERE.parent / "Fixtures" / "real-captures")
PHONE_WRITES = {0x12: "request", 0x52: "command"}
DEVICE_SENDS = {0x1B: "notification", 0x1D: "indication"}
PLACEHOLDER_SUFFIX = "-0000-4000-8000-67617474656d"
# Generic Access and Generic Attribute: bluetoothd serves its own, whatever a profile says.
BLUEZ_OWN = {norm_uuid("1800"), norm_uuid("1801")}  # the import's UUIDs for undiscovered handles (docs/import.md)


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



def digest(capture: Path) -> str:
    return hashlib.sha256(capture.read_bytes()).hexdigest()


def plan_device(capture: Path, device: str, who: str | int, gattemu_bin: str) -> dict:
    """Imports `device` (`who`: its address, or its link's HCI handle) from `capture`; the profile, the phone's writes
    and the device's notifications from tshark, and each device handle's characteristic (by the pinned handles, or
    by UUID where BlueZ cannot lay the table out with the device's handles). JSON: handles are ints, values hex."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "imported.json"
        r = subprocess.run([gattemu_bin, "import", str(capture), "-o", str(out), "--timing", "immediate", "--device", device],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            return {"device": device, "who": who, "import_failed": f"import failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"}
        profile = json.loads(out.read_text())
    values, cccds = pinned_handles(profile)
    timeline, names = recorded(capture, who)
    how, skip, services = "pinned handles", None, []
    table_of = who if isinstance(who, str) else None
    if not values:
        table = discovered_table(capture, table_of)
        values, cccds = handles_by_uuid(names, table)
        values.update(placeholder_handles(profile, declared_characteristics(capture, table_of)))
        how = "handles not pinned, characteristics found by UUID"
    if not any(e[0] == "write" and (e[1] in values or e[1] in cccds) for e in timeline):
        # What the phone did with the device was discovery only (an app that looks at nearby devices' services
        # and leaves): the replay finds the device and discovers the services the phone saw.
        # (A peer with no address: the capture's discovery cannot be told apart from other devices'.)
        services = sorted({service for service, _ in discovered_table(capture, table_of)} - BLUEZ_OWN) if table_of else []
        how = "no write: the phone discovered the device's services"
        if not services:
            skip = "no write to the device's own characteristics and no service discovered: nothing to replay"
    return {"device": device, "who": who, "how": how, "skip": skip, "profile": profile, "services": services,
            "values": [[h, *v] for h, v in sorted(values.items())], "cccds": [[h, v] for h, v in sorted(cccds.items())],
            "timeline": [[e[0], e[1], e[2].hex(), *e[3:]] for e in timeline]}


def make_plan(capture: Path, gattemu_bin: str, all_devices: bool) -> dict:
    """The capture's plan: the device the phone talked to most (as scripts/check-import picks it), or with
    `all_devices` every device it exchanged ATT PDUs with (a peer with no address as `connection N`)."""
    listing = subprocess.run([gattemu_bin, "import", str(capture), "--list"], capture_output=True, text=True, timeout=300,
                             stdin=subprocess.DEVNULL)
    connected = [(pdus, device, who) for pdus, links, device, who in listed_peers(listing.stdout) if links > 0 and pdus > 0]
    devices = [(device, who) for _, device, who in sorted(connected, key=lambda c: c[0], reverse=True)]
    return {"capture": capture.name, "sha256": digest(capture), "all_devices": all_devices,
            "devices": [plan_device(capture, device, who, gattemu_bin) for device, who in (devices if all_devices else devices[:1])]}


def decoded(device: dict) -> tuple[dict[int, tuple], dict[int, int], list[tuple]]:
    """A plan's device as the replay uses it: values (handle → service, characteristic, occurrence), CCCDs, timeline."""
    values = {h: (s, c, n) for h, s, c, n in device["values"]}
    cccds = {h: v for h, v in device["cccds"]}
    timeline = [(e[0], e[1], bytes.fromhex(e[2]), *e[3:]) for e in device["timeline"]]
    return values, cccds, timeline


def plan_for(capture: Path, gattemu_bin: str, all_devices: bool) -> tuple[dict, str]:
    """The plan scripts/e2e made on the host (GATTEMU_REPLAY_PLANS) when it is of this capture's bytes and devices,
    else one made here; and which of the two."""
    folder = os.environ.get("GATTEMU_REPLAY_PLANS")
    if folder:
        try:
            plan = json.loads((Path(folder) / f"{capture.name}.json").read_text())
            if plan.get("sha256") == digest(capture) and plan.get("all_devices") == all_devices:
                return plan, "made on the host"
        except (OSError, ValueError):
            pass
    return make_plan(capture, gattemu_bin, all_devices), "made in the VM"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--gattemu", required=True)
    parser.add_argument("--all-devices", action="store_true", default=os.environ.get("GATTEMU_REPLAY_DEVICES") == "all")
    parser.add_argument("directory", nargs="?", type=Path, default=DIRECTORY)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in capture_files([args.directory]):
        capture = Path(path)
        plan = make_plan(capture, args.gattemu, args.all_devices)
        (args.out / f"{capture.name}.json").write_text(json.dumps(plan) + "\n")
        print(f"replay plan: {capture.name}: {len(plan['devices'])} device(s)")


if __name__ == "__main__":
    main()
