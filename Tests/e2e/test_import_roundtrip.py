"""`gattemu import` round trip: gattemu runs a shipped profile, the device's app flow runs from the test
central while the central records its own HCI traffic (as a phone's btsnoop_hci.log holds it), the
capture is checked complete against what the central did (tshark as the oracle), imported, the imported
profile is run, and the same app flow against it gets byte-identical answers.

The LEAF flow writes fresh random bytes each run, so its writes never repeat: the profile is imported with
`--otherwise nearest` and each write is answered as the recorded write closest to it was.
"""
from __future__ import annotations

import collections
import json
import subprocess

import pytest

from conftest import profile_path, report
from flows import FLOWS, quiet
from recording import RecordingCentral

# What each flow's result holds that the device answered (the central's own random bytes excluded).
ANSWERS = {
    "noke": lambda run: {"session": run.session.hex(), "responses": [r.hex() for r in run.responses]},
    "bleproof": lambda run: {"info": run.info.hex(), "indications": [v.hex() for v in run.indications]},
    "leaf": lambda run: {"auth": [f.hex() for f in run.auth], "auth_result": run.auth_result.hex(),
                         "certificate": run.certificate.hex()},
}


def tshark_att(capture) -> list[tuple[int, str]]:
    """(opcode, value hex) of every ATT PDU tshark finds in the capture between the central's client and the
    peripheral's server: sent by the central for requests and commands, received for the rest (the
    peripheral's own client, e.g. BlueZ writing Client Supported Features, is left out)."""
    r = subprocess.run(["tshark", "-r", str(capture), "-Y", "btatt", "-T", "fields", "-e", "hci_h4.direction",
                        "-e", "btatt.opcode", "-e", "btatt.value"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"tshark cannot read {capture}: {r.stderr[-500:]}"
    assert "cut short" not in r.stderr and "appears to be damaged" not in r.stderr, r.stderr[-500:]
    pdus = []
    for line in r.stdout.splitlines():
        direction, opcode, value = (line.split("\t") + ["", ""])[:3]
        opcode = int(opcode.split(",")[0], 16)
        sent = int(direction, 16) == 0
        client_side = opcode in (0x12, 0x52, 0x16, 0x0A, 0x0C)
        if sent == client_side:
            pdus.append((opcode, value.replace(":", "")))
    return pdus


def check_complete(capture, ops: list[tuple]) -> dict:
    """The capture holds every write and notification the central made or saw (the same bytes, as many
    times), and every value it read: a capture that lost records cannot be imported faithfully."""
    pdus = tshark_att(capture)
    seen = {kind: collections.Counter(v for op, v in pdus if op in opcodes and v)
            for kind, opcodes in {"write": (0x12, 0x52), "notify": (0x1B,), "indicate": (0x1D,),
                                  "read": (0x0B, 0x0D)}.items()}
    did = {kind: collections.Counter(op[2] for op in ops if op[0] == kind) for kind in ("write", "notify", "indicate", "read")}
    for kind in ("write", "notify", "indicate"):
        assert seen[kind] == did[kind], f"capture incomplete: {kind}s in the capture {dict(seen[kind])}, central {dict(did[kind])}"
    missing = did["read"] - seen["read"]
    assert not missing, f"capture incomplete: values read by the central but not in the capture: {dict(missing)}"
    return {kind: sum(c.values()) for kind, c in did.items()} | {"att_pdus": len(pdus)}


@pytest.mark.parametrize("device", ["noke", "bleproof", "leaf"])
async def test_import_round_trip(central, start_gattemu, gattemu_bin, tmp_path, device):
    if getattr(central, "stack", "") != "bumble":
        pytest.fail("the round trip needs the Bumble central (it records its own HCI traffic)", pytrace=False)
    profile, flow = FLOWS[device]

    # 1. The shipped profile, the app flow, the central's capture.
    original = start_gattemu(profile)
    recorder = RecordingCentral(central, profile_path(profile))
    capture = tmp_path / f"{device}.btsnoop"
    with central.record(capture):
        first = await flow(recorder, quiet)
    original.stop()
    counts = check_complete(capture, recorder.ops)

    # 2. Import it.
    imported = tmp_path / f"{device}-imported.json"
    r = subprocess.run([gattemu_bin, "import", str(capture), "-o", str(imported), "--otherwise", "nearest"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"import failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    v = subprocess.run([gattemu_bin, "validate", str(imported)], capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, v.stdout + v.stderr
    text = json.loads(imported.read_text())
    assert text.get("rules"), f"no replay rules in the imported profile:\n{imported.read_text()[:3000]}"

    # 3. The imported device, the same app flow: the same answers, byte for byte.
    replica = start_gattemu(str(imported), name="imported")
    again = RecordingCentral(central, str(imported))
    second = await flow(again, quiet)
    replica.stop()
    assert ANSWERS[device](second) == ANSWERS[device](first), (
        f"the imported {device} answered differently\nimport report:\n{r.stdout}\n"
        f"imported device's output:\n{replica.output()[-3000:]}")
    writes = [op for op in again.ops if op[0] == "write"]
    report(f"import round trip {device}: capture {capture.stat().st_size} bytes, {counts['att_pdus']} ATT PDUs "
           f"({counts['write']} writes, {counts['notify'] + counts['indicate']} notifications/indications, "
           f"{counts['read']} reads) complete; imported profile {imported.stat().st_size} bytes, "
           f"{len(text.get('rules', []))} rules; replay: {len(writes)} writes answered byte-identically")
