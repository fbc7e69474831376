#!/usr/bin/env python3
"""Inside the sandbox VM (started by scripts/demo): run gattemu with a shipped
profile on $GATTEMU_PERIPH and a central on $GATTEMU_CENTRAL that performs the
device's app flow; print both sides' transcript, interleaved as it happens.

    python Tests/e2e/demo.py noke|leaf|bleproof [extra gattemu args...]
"""
import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from central import open_central  # noqa: E402
from flows import FLOWS  # noqa: E402

T0 = time.monotonic()
_out = threading.Lock()


def emit(who: str, line: str) -> None:
    """One whole line per write: gattemu's pump thread and the central interleave."""
    with _out:
        sys.stdout.write(f"{time.monotonic() - T0:6.2f} {who:7} | {line}\n")
        sys.stdout.flush()


def say(line: str) -> None:
    emit("central", line)


def pump(stream, prefix: str) -> None:
    for raw in iter(stream.readline, b""):
        emit(prefix, raw.decode(errors="replace").rstrip())


async def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else "noke"
    if which not in FLOWS:
        print(f"demo: unknown device {which!r} (noke, leaf, bleproof)", file=sys.stderr)
        return 2
    profile_file, flow = FLOWS[which]
    root = os.environ["GATTEMU_ROOT"]
    binary = f"{root}/.build/debug/gattemu"
    argv = [binary, "run", f"{root}/profiles/{profile_file}", "--adapter", os.environ["GATTEMU_PERIPH"],
            *sys.argv[2:]]
    emit("demo", f"peripheral {os.environ['GATTEMU_PERIPH']} "
                 f"({os.environ['GATTEMU_PERIPH_ADDRESS']}), central {os.environ['GATTEMU_CENTRAL']} "
                 f"({os.environ.get('GATTEMU_CENTRAL_STACK', 'bumble')})")
    emit("demo", f"$ {' '.join(argv)}")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    reader = threading.Thread(target=pump, args=(proc.stdout, "gattemu"), daemon=True)
    reader.start()
    central = None
    ok = False
    try:
        central = await open_central()
        task = asyncio.ensure_future(flow(central, say))
        while not task.done():
            await asyncio.wait({task}, timeout=0.5)
            if proc.poll() is not None and not task.done():
                task.cancel()
                emit("demo", f"gattemu exited with {proc.returncode} during the flow")
                break
        if task.done() and not task.cancelled():
            task.result()
            ok = True
    except Exception as e:  # noqa: BLE001 - report, then clean up
        emit("demo", f"flow failed: {type(e).__name__}: {e}")
    finally:
        if central is not None:
            await central.close()
        rc = proc.poll()
        if rc is None:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
                emit("demo", "gattemu did not stop on SIGTERM: killed")
        reader.join(5)
        emit("demo", f"gattemu exit {rc}")
    with _out:
        print(f"demo: {which} flow {'completed' if ok and rc == 0 else 'FAILED'}", flush=True)
    return 0 if ok and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
