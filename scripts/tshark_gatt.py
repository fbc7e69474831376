"""The GATT table a capture's discovery shows, as tshark dissects it (the oracle for `gattemu import`).

GATT lets characteristics in a service, and services in a table, share a UUID (HID Reports, several Battery
services): they are told apart by occurrence, the n-th of that UUID in handle order. Shared by
scripts/check-import and the e2e replay of real captures (Tests/e2e/test_real_capture_replay.py)."""
import json
import subprocess

BASE = "-0000-1000-8000-00805f9b34fb"


def full(uuid):
    """A UUID as tshark or a profile writes it ("0x2a4d", "2A4D", bytes with colons, 128-bit) in full lowercase."""
    u = uuid.lower().removeprefix("0x")
    if ":" in u:  # tshark's uuid128: the bytes as sent, least significant first
        u = "".join(reversed(u.split(":")))
    if len(u) == 4:
        return f"0000{u}{BASE}"
    if len(u) == 32:
        u = f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
    return u


def as_list(x):
    return x if isinstance(x, list) else [] if x is None else [x]


def discovered_table(path, address):
    """[(service uuid, [(characteristic uuid, properties, value handle)])] in handle order, from the discovery
    responses `address` sent (all devices' when None). A table that changed between connections counts as last
    discovered."""
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "btatt.opcode==0x11 || btatt.opcode==0x09", "-T", "json",
                          "--no-duplicate-keys", "-J", "btatt bthci_acl"], capture_output=True, text=True,
                         timeout=300, stdin=subprocess.DEVNULL).stdout
    services, characteristics = {}, {}
    for packet in json.loads(out or "[]"):
        layers = packet["_source"]["layers"]
        source = as_list(layers.get("bthci_acl", {}).get("bthci_acl.src.bd_addr"))
        if address and source and source[0].lower() != address.lower():
            continue
        att = layers.get("btatt", {})
        for opcode in as_list(att.get("btatt.opcode")):
            for entry in as_list(att.get("btatt.attribute_data")):
                uuid = entry.get("btatt.uuid16") or entry.get("btatt.uuid128")
                if opcode == "0x11" and uuid:
                    start = int(entry["btatt.handle"], 16)
                    services[start] = (start, int(entry["btatt.group_end_handle"], 16), full(as_list(uuid)[0]))
                elif opcode == "0x09" and "btatt.characteristic_properties" in entry and uuid:
                    handles = as_list(entry.get("btatt.handle"))
                    value_handle = int(handles[1], 16) if len(handles) > 1 else None
                    characteristics[int(handles[0], 16)] = (full(as_list(uuid)[0]), int(entry["btatt.characteristic_properties"], 16), value_handle)
    return [(uuid, [characteristics[h] for h in sorted(characteristics) if start < h <= end])
            for start, end, uuid in sorted(services.values())]


def by_occurrence(items, key):
    """{(key(item), n): item}: the n-th item (from 0, in order) with that key."""
    seen, out = {}, {}
    for item in items:
        k = key(item)
        seen[k] = seen.get(k, -1) + 1
        out[(k, seen[k])] = item
    return out
