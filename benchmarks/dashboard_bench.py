#!/usr/bin/env python3
"""The dashboard's timeline under load, in headless Chromium: 10,000 events, scrolled from top to bottom in 60
steps (one a frame) and filtered; the frame times' p95 and the filter's time, judged against their targets. A
timing bound belongs here, not in a test: Tests/web/test_dashboard.py checks the same page works (virtualised rows,
the filter's result) and prints these figures without judging them, since a loaded machine slows any frame.

    python3 benchmarks/dashboard_bench.py [--fixture PATH] [--out DIR]      (scripts/bench --dashboard)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"scroll frame p95 (ms), 10,000 events": 100.0, "filter 10,000 events (ms)": 200.0}


def scroll_frames(driver) -> list[float]:
    """Frame times (ms) while the timeline is scrolled from top to bottom in 60 steps, one per frame."""
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const viewport = document.querySelector('#timeline .tl-viewport');
        viewport.scrollTop = 0;
        const times = [];
        let step = 0, last = performance.now();
        function frame(now) {
          times.push(now - last); last = now;
          step++;
          viewport.scrollTop = viewport.scrollHeight * step / 60;
          if (step < 60) requestAnimationFrame(frame); else done(times);
        }
        requestAnimationFrame(frame);
    """)


def filter_ms(driver, text: str = "fault") -> float:
    """How long the timeline takes to filter its events by `text`."""
    return driver.execute_script("""
        const start = performance.now();
        window.gattemuTimeline.setFilter({text: arguments[0]});
        return performance.now() - start;
    """, text)


def p95(frames: list[float]) -> float:
    ordered = sorted(frames[1:])  # the first frame includes the scroll to the top
    return ordered[int(len(ordered) * 0.95) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", help="gattemu-control-fixture (default: the debug build's)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "Tests" / "web"))
    from conftest import Server, bin_path, make_browser, wait_for
    fixture = Path(args.fixture) if args.fixture else bin_path() / "gattemu-control-fixture"
    server = Server(fixture, "--profile", "profiles/noke-lock.json", "--events", "10000")
    with tempfile.TemporaryDirectory() as tmp:
        driver = make_browser(Path(tmp))
        try:
            driver.get(server.url + "/")
            wait_for(lambda: driver.execute_script("return window.gattemuTimeline && window.gattemuTimeline.events.length")
                     >= 9990, timeout=60, what="10,000 events loaded")
            figures = {"scroll frame p95 (ms), 10,000 events": round(p95(scroll_frames(driver)), 1),
                       "filter 10,000 events (ms)": round(filter_ms(driver), 1)}
        finally:
            driver.quit()
            server.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    results = [{"figure": name, "measured": value, "target": f"< {TARGETS[name]:g}", "met": value < TARGETS[name]}
               for name, value in figures.items()]
    (args.out / "dashboard.json").write_text(json.dumps(results, indent=1) + "\n")
    for r in results:
        print(f"dashboard bench: {r['figure']}: {r['measured']} (target {r['target']}: {'met' if r['met'] else 'MISSED'})")
    return 0 if all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
