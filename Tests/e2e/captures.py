"""The test central's own HCI captures, checked against what the central did (tshark as the oracle).

A capture that lost records (btmon dying part-way was seen) cannot be imported faithfully, so each one is
checked: every write the central completed, every notification or indication it received and every read it
got an answer to must be in it. Checked when it is closed, or (each test's own capture) on the host after the
VM: `python3 Tests/e2e/captures.py DIR...` (scripts/e2e runs it) checks every `*.btsnoop` that has its
`*.btsnoop.ops.json` beside it.
"""
from __future__ import annotations

import collections
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# ATT opcodes a client sends (requests and commands); the others come from the server.
CLIENT_OPCODES = {0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52, 0xD2}
KINDS = {"write": (0x12, 0x52, 0x16), "notify": (0x1B,), "indicate": (0x1D,), "read": (0x0B, 0x0D)}


def tshark_att(capture) -> list[tuple[int, str]]:
    """(opcode, value hex) of every ATT PDU tshark finds between the central's client and the peripheral's
    server: requests and commands the central sent, everything else it received (the peripheral's own
    client, e.g. BlueZ writing Client Supported Features, is left out)."""
    r = subprocess.run(["tshark", "-r", str(capture), "-Y", "btatt", "-T", "fields", "-e", "hci_h4.direction",
                        "-e", "btatt.opcode", "-e", "btatt.value"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"tshark cannot read {capture}: {r.stderr[-500:]}"
    assert "cut short" not in r.stderr and "appears to be damaged" not in r.stderr, r.stderr[-500:]
    pdus = []
    for line in r.stdout.splitlines():
        direction, opcode, value = (line.split("\t") + ["", ""])[:3]
        if not direction or not opcode:
            continue
        code = int(opcode.split(",")[0], 16)
        if (int(direction, 16) == 0) == (code in CLIENT_OPCODES):
            pdus.append((code, value.replace(":", "")))
    return pdus


def joined_long_writes(pdus: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A long write (Prepare Write Requests, then Execute Write Request) as the one write the central made: its
    parts joined, in order (a central writes them at increasing offsets)."""
    out, parts = [], []
    for code, value in pdus:
        if code == 0x16:
            parts.append(value)
        elif code == 0x18:
            if parts:
                out.append((0x12, "".join(parts)))
            parts = []
        else:
            out.append((code, value))
    return out


def counts(capture) -> dict[str, collections.Counter]:
    """Values by kind (tshark shows no `btatt.value` for empty values, nor for values it decodes by type,
    such as the GAP Device Name), and how many PDUs of each kind there are."""
    pdus = joined_long_writes(tshark_att(capture))
    return {kind: collections.Counter(v for op, v in pdus if op in opcodes and v) for kind, opcodes in KINDS.items()} \
        | {"pdus": collections.Counter({"all": len(pdus)})} \
        | {"number": collections.Counter({kind: sum(1 for op, _ in pdus if op in opcodes) for kind, opcodes in KINDS.items()})} \
        | {"valueless": collections.Counter({kind: sum(1 for op, v in pdus if op in opcodes and not v) for kind, opcodes in KINDS.items()})}


def check_complete(capture, ops: list[tuple], exact: bool = False) -> dict:
    """`ops`: ("write" | "notify" | "indicate" | "read", value hex) the central completed. The capture must
    hold at least as many PDUs of each kind, and every write, notification and indication with the same bytes
    (`exact`: and no others). Read values are not compared (long reads come in parts). Returns the figures."""
    seen = counts(capture)
    did = {kind: collections.Counter(op[-1] for op in ops if op[0] == kind and op[-1]) for kind in KINDS}
    for kind in KINDS:  # empty values (a zero-length write) and values tshark decodes by type: counted instead
        number = sum(1 for op in ops if op[0] == kind)
        assert seen["number"][kind] >= number, f"capture {capture} incomplete: {number} {kind}s by the central, {seen['number'][kind]} in it"
    for kind in ("write", "notify", "indicate"):
        # tshark shows no value for attributes it decodes by their SIG type (Battery Level, Device Name, …): those
        # PDUs can stand for missing values, one each.
        missing = did[kind] - seen[kind]
        unaccounted = sum(missing.values()) - seen["valueless"][kind]
        assert unaccounted <= 0, f"capture {capture} incomplete: {kind}s the central made or got are not in it: {dict(missing)}"
        if exact:
            assert seen[kind] == did[kind], f"capture {capture}: {kind}s {dict(seen[kind])}, central {dict(did[kind])}"
    return {kind: sum(1 for op in ops if op[0] == kind) for kind in KINDS} | {"att_pdus": seen["pdus"]["all"]}


def advertising_reports(capture, address: str) -> list[dict]:
    """The legacy advertising reports (ADV_IND …, SCAN_RSP) from `address` in a central's capture, as tshark
    decodes them: event type, data length, AD types, 128-bit UUIDs (service lists and service data keys, as
    32 hex digits), service data bytes (hex) and name."""
    r = subprocess.run(["tshark", "-r", str(capture), "-Y",
                        f"bthci_evt.le_meta_subevent == 0x02 && bthci_evt.bd_addr == {address.lower()}",
                        "-T", "fields", "-E", "separator=|", "-e", "bthci_evt.le_advts_event_type",
                        "-e", "bthci_evt.data_length", "-e", "btcommon.eir_ad.entry.type",
                        "-e", "btcommon.eir_ad.entry.custom_uuid_128", "-e", "btcommon.eir_ad.entry.service_data",
                        "-e", "btcommon.eir_ad.entry.device_name"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"tshark cannot read {capture}: {r.stderr[-500:]}"
    reports = []
    for line in r.stdout.splitlines():
        kind, length, types, uuids, data, name = (line.split("|") + [""] * 6)[:6]
        reports.append({"type": int(kind, 16), "length": int(length), "ad_types": [int(t, 16) for t in types.split(",") if t],
                        "uuids_128": [u for u in uuids.split(",") if u], "service_data": [d for d in data.split(",") if d],
                        "name": name})
    return reports


def ops_path(capture) -> Path:
    return Path(str(capture) + ".ops.json")


def write_ops(capture, ops: list[tuple], exact: bool = False) -> None:
    """What the central did during `capture`, for check_complete on the host (main below); `exact`: and nothing
    else is in it."""
    listed = [list(op) for op in ops]
    ops_path(capture).write_text(json.dumps({"exact": True, "ops": listed} if exact else listed))


def main(dirs: list[str]) -> int:
    """Checks every capture in `dirs` that has its ops beside it; one line per capture that fails, a summary
    line; exit 1 if any failed."""
    captures = sorted(p for d in dirs for p in Path(d).glob("*.btsnoop") if ops_path(p).exists())

    def check(capture: Path) -> str | None:
        try:
            ops = json.loads(ops_path(capture).read_text())
            exact = isinstance(ops, dict) and ops.get("exact") is True
            check_complete(capture, [tuple(op) for op in (ops["ops"] if isinstance(ops, dict) else ops)], exact=exact)
        except (AssertionError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            return f"{capture.name}: {e}"
        return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(check, captures) if f]
    for failure in failures:
        print(f"check-central-captures: FAILED {failure}")
    print(f"check-central-captures: {len(captures) - len(failures)} of {len(captures)} central captures hold "
          f"everything the central did (tshark) in {', '.join(dirs)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
