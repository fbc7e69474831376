#!/usr/bin/env python3
"""Where scripts/test's time goes.

  test_times.py record OUT TOTAL TIER=SECONDS[:EXIT]... [--shard-dir DIR]...
      writes OUT (out/test-times.json): the total, each tier's seconds, and for the e2e tier each VM's bring-up
      (kernel boot to pytest), pytest time and every test's seconds (each VM's e2e-durations.json, written by
      Tests/e2e/conftest.py); prints the e2e tier's shards and its 15 slowest tests.
  test_times.py durations [OUT]
      writes Tests/e2e/durations.json (what the shards are balanced by) from OUT's per-test seconds, keeping the
      figures of tests OUT does not have (a run with -k).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = ROOT / "Tests" / "e2e" / "durations.json"
SLOWEST = 15


def record(out: Path, total: int, tiers: list[str], shard_dirs: list[Path]) -> None:
    times: dict[str, float] = {}
    failed = None
    for spec in tiers:
        name, _, rest = spec.partition("=")
        seconds, _, code = rest.partition(":")
        times[name] = float(seconds)
        if code and code != "0" and failed is None:
            failed = name
    shards, tests = [], {}
    for directory in shard_dirs:
        path = directory / "e2e-durations.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        shards.append({key: data.get(key) for key in ("shard", "bring_up_s", "pytest_s", "exit")}
                      | {"tests": len(data.get("tests", {}))})
        tests.update(data.get("tests", {}))
    slowest = sorted(tests.items(), key=lambda kv: -kv[1])[:SLOWEST]
    result = {"total": total, "tiers": times, "failed_tier": failed,
              "e2e": {"shards": shards, "slowest": slowest, "tests": dict(sorted(tests.items()))}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    if shards:
        print("  e2e shards: " + "; ".join(
            f"{s['shard']}: VM up in {s['bring_up_s']} s, pytest {s['pytest_s']} s, {s['tests']} tests" for s in shards))
        print(f"  e2e slowest {len(slowest)} of {len(tests)} tests (setup + call + teardown):")
        for nodeid, seconds in slowest:
            print(f"    {seconds:7.1f} s  {nodeid}")
    print(f"  (all of it in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out})")


def durations(source: Path) -> None:
    tests = json.loads(source.read_text())["e2e"]["tests"]
    if not tests:
        raise SystemExit(f"test_times: {source} has no e2e test times")
    try:
        known = json.loads(DURATIONS.read_text()).get("tests", {})
    except (OSError, ValueError):
        known = {}
    known.update({k: round(v, 1) for k, v in tests.items()})
    DURATIONS.write_text(json.dumps({
        "about": "Seconds each e2e test took in the sandbox (setup + call + teardown), for balancing the shards of "
                 "scripts/e2e --shards N; written by `python3 scripts/test_times.py durations` from out/test-times.json.",
        "tests": dict(sorted(known.items()))}, indent=1) + "\n")
    print(f"test_times: {DURATIONS.relative_to(ROOT)}: {len(known)} tests ({len(tests)} from {source})")


def main(argv: list[str]) -> None:
    if argv[:1] == ["record"] and len(argv) >= 3:
        args, dirs = argv[3:], []
        while "--shard-dir" in args:
            i = args.index("--shard-dir")
            dirs.append(Path(args[i + 1]))
            del args[i:i + 2]
        record(Path(argv[1]), int(argv[2]), args, dirs)
    elif argv[:1] == ["durations"]:
        durations(Path(argv[1]) if len(argv) > 1 else ROOT / "out" / "test-times.json")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
