"""The GATT table a capture's discovery shows, as tshark dissects it (the oracle for `gattemu import`).

GATT lets characteristics in a service, and services in a table, share a UUID (HID Reports, several Battery
services): they are told apart by occurrence, the n-th of that UUID in handle order. Shared by
scripts/check-import and the e2e replay of real captures (Tests/e2e/test_real_capture_replay.py)."""
import functools
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


@functools.lru_cache(maxsize=8)
def dissected(path, display_filter, layers, raw=False):
    """tshark's JSON of the packets of `path` that `display_filter` keeps, with only `layers` (and their bytes when
    `raw`): once per file, however many of its devices are compared."""
    return tuple(streamed(path, display_filter, layers, raw))


def streamed(path, display_filter, layers, raw=False):
    """The packets `dissected` gives, one at a time, without holding them all: for big captures (a 1 MB log of
    17,000 ATT PDUs is 80 MB of tshark's JSON). Relies on tshark's layout of its JSON array: each packet opens
    with a line "  {" and closes with "  }" or "  },"."""
    with subprocess.Popen(["tshark", "-r", str(path), "-Y", display_filter, "-T", "json", *(["-x"] if raw else []),
                           "--no-duplicate-keys", "-J", layers], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, text=True) as tshark:
        lines = []
        for line in tshark.stdout:
            if line.startswith("  {"):
                lines = [line]
            elif lines and line.rstrip() in ("  }", "  },"):
                lines.append("  }")
                yield json.loads("".join(lines))
                lines = []
            elif lines:
                lines.append(line)
        tshark.wait(timeout=300)


def unknown(address):
    """Whether tshark gave no address for a link's end (it has none before the link's connection event, or for an
    event it does not dissect)."""
    return not address or address == "00:00:00:00:00:00"


def sent(layers):
    """Whether the capturing side sent the packet (btsnoop's direction flag, PacketLogger's record type); unknown
    counts as received."""
    direction = (as_list(layers.get("frame", {}).get("frame.p2p_dir")) or [""])[0]
    kind = (as_list(layers.get("packetlogger", {}).get("packetlogger.type")) or [""])[0]
    return direction == "0" or kind == "0x02"


def peers_by_handle(path):
    """{handle: [(frame, address or None)]}: which peer each connection handle linked to from which frame on, read
    from the LE (Enhanced) Connection Complete events' own bytes (status, handle, role, peer address type, peer
    address: the same in subevents 0x01, 0x0A and 0x29, which an iPhone sends and tshark 4.0 does not dissect);
    a Disconnection Complete ends the link (None)."""
    links = {}
    # Only those subevents: a capture's advertising reports (also LE Meta events) can be hundreds of MB of JSON.
    completes = " || ".join(f"bthci_evt.le_meta_subevent == {code:#04x}" for code in (0x01, 0x0A, 0x29))
    for packet in dissected(str(path), f"(bthci_evt.code == 0x3e && ({completes})) || bthci_evt.code == 0x05", "frame bthci_evt", raw=True):
        layers = packet["_source"]["layers"]
        raw = layers.get("bthci_evt_raw")
        while isinstance(raw, list):
            raw = raw[0] if raw else ""
        event = bytes.fromhex(raw or "")
        frame = int(as_list(layers.get("frame", {}).get("frame.number"))[0])
        if len(event) >= 14 and event[0] == 0x3E and event[2] in (0x01, 0x0A, 0x29) and event[3] == 0:
            address = ":".join(f"{b:02x}" for b in reversed(event[8:14]))
            links.setdefault(int.from_bytes(event[4:6], "little") & 0x0FFF, []).append((frame, address))
        elif len(event) >= 6 and event[0] == 0x05 and event[2] == 0:
            links.setdefault(int.from_bytes(event[3:5], "little") & 0x0FFF, []).append((frame, None))
    return links


def peer_at(links, handle, frame):
    """The peer `handle` linked to at `frame` (None when no connection event before it says)."""
    peer = None
    for start, address in links.get(handle, []):
        if start > frame:
            break
        peer = address
    return peer


def discovered_table(path, address):
    """[(service uuid, [(characteristic uuid, properties, value handle)])] in handle order, from the discovery
    responses `address` sent (all devices' when None; on a link tshark gives no address for, the one its connection
    event names). A table that changed between connections counts as last discovered."""
    services, characteristics = discovery(path, address)
    return [(uuid, [characteristics[h] for h in sorted(characteristics) if start < h <= end])
            for start, end, uuid in sorted(services.values())]


def declared_characteristics(path, address):
    """[(characteristic uuid, properties, value handle)] in handle order: every characteristic declaration `address`
    sent, also those of services whose discovery the capture does not have (a phone that used its cache for them)."""
    _, characteristics = discovery(path, address)
    return [characteristics[h] for h in sorted(characteristics)]


def discovery(path, address):
    """The Read By Group Type (services: start → (start, end, uuid)) and Read By Type (characteristic declarations:
    handle → (uuid, properties, value handle)) responses `address` sent, as discovered_table reads them."""
    services, characteristics = {}, {}
    links = None
    for packet in dissected(str(path), "btatt.opcode==0x11 || btatt.opcode==0x09", "frame packetlogger btatt bthci_acl"):
        layers = packet["_source"]["layers"]
        if sent(layers):
            continue  # the capturing side's own answers (a device discovering the phone's server): not the device's
        acl = layers.get("bthci_acl", {})
        source = (as_list(acl.get("bthci_acl.src.bd_addr")) or [""])[0]
        if address and unknown(source) and acl.get("bthci_acl.chandle"):
            links = peers_by_handle(path) if links is None else links
            frame = int(as_list(layers.get("frame", {}).get("frame.number"))[0])
            source = peer_at(links, int(as_list(acl["bthci_acl.chandle"])[0], 16), frame) or ""
            if not source:
                continue  # a link tshark cannot attribute, nor a connection event: not the device's
        if address and source and source.lower() != address.lower():
            continue
        att = layers.get("btatt", {})
        for opcode in as_list(att.get("btatt.opcode")):
            for entry in as_list(att.get("btatt.attribute_data")):
                uuid = entry.get("btatt.uuid16") or entry.get("btatt.uuid128")
                value = (as_list(entry.get("btatt.value")) or [""])[0]
                if opcode == "0x11" and not uuid and len(value.split(":")) in (2, 16):
                    # A Read By Group Type Response's value is the service's UUID; tshark names it so only when it
                    # paired the response with its request (else "btatt.value", the UUID's bytes as sent).
                    uuid = value
                if opcode == "0x11" and uuid:
                    start = int(entry["btatt.handle"], 16)
                    services[start] = (start, int(entry["btatt.group_end_handle"], 16), full(as_list(uuid)[0]))
                elif opcode == "0x09" and "btatt.characteristic_properties" in entry and uuid:
                    handles = as_list(entry.get("btatt.handle"))
                    value_handle = int(handles[1], 16) if len(handles) > 1 else None
                    characteristics[int(handles[0], 16)] = (full(as_list(uuid)[0]), int(entry["btatt.characteristic_properties"], 16), value_handle)
    return services, characteristics


def by_occurrence(items, key):
    """{(key(item), n): item}: the n-th item (from 0, in order) with that key."""
    seen, out = {}, {}
    for item in items:
        k = key(item)
        seen[k] = seen.get(k, -1) + 1
        out[(k, seen[k])] = item
    return out
