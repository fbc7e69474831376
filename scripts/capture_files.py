"""Which files are captures: btsnoop, pcap (either byte order, micro- or nanoseconds), pcapng or Apple PacketLogger,
told by their first bytes, never by their name (PacketLogger has no magic: its first records are checked as
gattemu's reader and Wireshark's do, Sources/Capture/Readers/PacketLoggerReader.swift). Shared by scripts/check-import, scripts/check-capture-decoder and the e2e replay
of real captures (Tests/e2e/test_real_capture_replay.py)."""
import os
import re
import struct

MAGICS = (b"btsnoop\0", b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1", b"\x0a\x0d\x0d\x0a")


# PacketLogger record types: HCI command, event, ACL sent/received, SCO sent/received, LMP sent/received; syslog,
# kernel, kernel debug, error, power, note, configuration, new controller.
PACKETLOGGER_TYPES = {0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B} | set(range(0xF7, 0xFF))


def is_packetlogger(head) -> bool:
    """Whether `head` (the file's first bytes, 5 records' worth) starts like a PacketLogger file."""
    if len(head) < 12:
        return False
    big_endian = head[0:2] == b"\0\0" and head[2:4] != b"\0\0"
    order = ">" if big_endian else "<"
    offset = 0
    for index in range(5):
        if len(head) < offset + 12:
            return index > 0
        length, _, microseconds = struct.unpack_from(order + "III", head, offset)
        if not 8 <= length < 65536 or microseconds >= 1_000_000:
            return False
        if length > 8 and (len(head) < offset + 13 or head[offset + 12] not in PACKETLOGGER_TYPES):
            return False
        offset += 4 + length
    return True


def is_capture(path) -> bool:
    with open(path, "rb") as f:
        head = f.read(5 * 65548)
    return any(head.startswith(m) for m in MAGICS) or is_packetlogger(head)


def capture_files(directories):
    """Every capture under the directories (recursively), sorted by name within each folder."""
    for directory in directories:
        for root, _, files in os.walk(directory):
            for name in sorted(files):
                path = os.path.join(root, name)
                if is_capture(path):
                    yield path


# A peripheral line of `gattemu import --list`: an address and its names, or a peer with no address by its connection
# and HCI handle; then its connections and ATT PDUs (Sources/CaptureImport/CaptureImport.swift, Choice.description).
LISTED_PEER = re.compile(r"^  (?:([0-9A-F:]{17}) .*?|an unknown peer \(connection (\d+), HCI handle (0x[0-9a-f]{4})\)): "
                         r"(\d+) connections?, (\d+) ATT PDUs", re.M)


def listed_peers(listing):
    """The peripherals `gattemu import --list` printed: (ATT PDUs, connections, the `--device` that picks it, its
    address or, for a peer with no address, its link's HCI handle as an int)."""
    return [(int(m[5]), int(m[4]), m[1] or f"connection {m[2]}", m[1] or int(m[3], 16)) for m in LISTED_PEER.finditer(listing)]
