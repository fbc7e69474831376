"""Which files are captures: btsnoop, pcap (either byte order, micro- or nanoseconds) or pcapng, told by their
first bytes, never by their name. Shared by scripts/check-import, scripts/check-capture-decoder and the e2e replay
of real captures (Tests/e2e/test_real_capture_replay.py)."""
import os

MAGICS = (b"btsnoop\0", b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1", b"\x0a\x0d\x0d\x0a")


def is_capture(path) -> bool:
    with open(path, "rb") as f:
        head = f.read(8)
    return any(head.startswith(m) for m in MAGICS)


def capture_files(directories):
    """Every capture under the directories (recursively), sorted by name within each folder."""
    for directory in directories:
        for root, _, files in os.walk(directory):
            for name in sorted(files):
                path = os.path.join(root, name)
                if is_capture(path):
                    yield path
