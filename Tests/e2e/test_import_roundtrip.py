"""`gattemu import` round trip: gattemu runs a shipped profile, the device's app flow runs from the test
central while the central records its own HCI traffic (as a phone's btsnoop_hci.log holds it), the
capture is imported, the imported profile is run, and the same app flow against it gets byte-identical answers.
That the capture holds exactly what the central did is checked with tshark on the host after the VM (the capture
is kept in $GATTEMU_OUT as central-import-DEVICE.btsnoop, with what the central did beside it: captures.py).

The LEAF flow writes fresh random bytes each run, so its writes never repeat: the profile is imported with
`--otherwise nearest` and each write is answered as the recorded write closest to it was.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

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


@pytest.mark.parametrize("device", ["noke", "bleproof", "leaf"])
async def test_import_round_trip(central, start_gattemu, gattemu_bin, tmp_path, device):
    if getattr(central, "stack", "") != "bumble":
        pytest.fail("the round trip needs the Bumble central (it records its own HCI traffic)", pytrace=False)
    profile, flow = FLOWS[device]

    # 1. The shipped profile, the app flow, the central's capture.
    original = start_gattemu(profile)
    recorder = RecordingCentral(central, profile_path(profile))
    out = Path(os.environ["GATTEMU_OUT"])
    capture = out / f"central-import-{device}.btsnoop"
    with central.record(capture, check="later", exact=True):  # on the host: exactly these ATT operations are in it
        first = await flow(recorder, quiet)
    original.stop()

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
    capture2 = out / f"central-import-{device}-again.btsnoop"
    with central.record(capture2, check="later"):
        second = await flow(again, quiet)
    replica.stop()
    assert ANSWERS[device](second) == ANSWERS[device](first), (
        f"the imported {device} answered differently\nimport report:\n{r.stdout}\n"
        f"imported device's output:\n{replica.output()[-3000:]}")
    # The imported device looks the same to a phone: its capture imports to the same table, handles included
    # (pinned: a phone's cached handles keep working) and the same advertisement.
    reimported = tmp_path / f"{device}-reimported.json"
    r2 = subprocess.run([gattemu_bin, "import", str(capture2), "-o", str(reimported)], capture_output=True,
                        text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    table = lambda p: [(s["uuid"], s.get("handle"), [(c["uuid"], c.get("handle"), c["flags"]) for c in s["characteristics"]])
                       for s in p["services"]]
    again_text = json.loads(reimported.read_text())
    assert table(again_text) == table(text), f"the imported device's table differs:\n{table(again_text)}\n{table(text)}"
    assert all(s.get("handle") for s in text["services"]), f"handles not pinned:\n{r.stdout}"
    strip = lambda ads: [{k: v for k, v in a.items() if k != "description"} for a in ads]
    assert strip(again_text.get("advertisements", [])) == strip(text.get("advertisements", []))
    writes = [op for op in again.ops if op[0] == "write"]
    counts = {kind: sum(1 for op in recorder.ops if op[0] == kind) for kind in ("write", "notify", "indicate", "read")}
    report(f"import round trip {device}: capture {capture.stat().st_size} bytes "
           f"({counts['write']} writes, {counts['notify'] + counts['indicate']} notifications/indications, "
           f"{counts['read']} reads); imported profile {imported.stat().st_size} bytes, "
           f"{len(text.get('rules', []))} rules; replay: {len(writes)} writes answered byte-identically")
