"""scripts/bench keeps working (issue #5): a smoke run of benchmarks/bench.py in the e2e VM.

Not a timed test: a handful of operations per loop with gattemu (the build under test), bless and
bluetoothctl's C server on the Noke profile. It checks that every implementation ran without an error,
that each figure the targets are read from was measured, and that the report has its ratio columns.
The real figures come from `scripts/bench` (benchmarks/README.md).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_smoke_run_measures_every_figure(gattemu_bin, tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    # bench.py opens its own Bumble central (HCI user channel) on $GATTEMU_CENTRAL, which the suite's session
    # central holds once any test before this one used it (test_address_change does): a spare controller then.
    env = dict(os.environ)
    if os.environ.get("GATTEMU_CENTRAL2"):
        env["GATTEMU_CENTRAL"] = os.environ["GATTEMU_CENTRAL2"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--quick", "--ops", "5", "--bursts", "1",
         "--soak", "40,80", "--soak-impls", "gattemu", "--impls", "gattemu,bless,bluetoothctl",
         "--profiles", "noke", "--gattemu", gattemu_bin, "--out", str(out)],
        capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL)
    report = (out / "bench.md").read_text() if (out / "bench.md").exists() else ""
    assert proc.returncode == 0, f"bench.py exited {proc.returncode}\n{report}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    data = json.loads((out / "bench.json").read_text())

    runs = {run["impl"]: run for run in data["runs"]}
    assert set(runs) == {"gattemu", "bless", "bluetoothctl"}
    assert all(not run["errors"] for run in runs.values()), [run["errors"] for run in runs.values()]
    table = data["table"]
    for figure in ("start → adv registered (ms), Noke", "RTT write-req → notify p50 (ms)",
                   "RTT write-cmd → notify p50 (ms)", "CPU per 1,000 write-cmd→notify (ms)",
                   "peak RSS VmHWM (KiB), Noke", "anonymous memory at the end (KiB), Noke"):
        assert isinstance(table[figure]["gattemu"], (int, float)) and table[figure]["gattemu"] > 0, figure
        assert isinstance(table[figure]["bless"], (int, float)) and table[figure]["bless"] > 0, figure
    assert table["burst notifications/s (central receives)"]["gattemu"] > 0
    assert table["RSS after 80 soak ops (KiB)"]["gattemu"] > 0
    measured = {target["target"]: target["measured"] for target in data["targets"]}
    assert measured["p50 RTT vs bluetoothctl (write-req → notify)"] is not None
    assert measured["peak RSS vs bless (Noke)"] is not None
    assert "gattemu/bless" in report and "gattemu/bluetoothctl" in report
