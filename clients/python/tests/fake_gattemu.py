#!/usr/bin/env python3
"""Stands in for `gattemu` in the plugin's tests, where there is no Bluetooth: `run PROFILE ... --control
127.0.0.1:PORT` serves gattemu-control-fixture ($GATTEMU_FIXTURE) on that port with the token from
$GATTEMU_CONTROL_TOKEN; its argv goes to $FAKE_ARGV_LOG. $FAKE_DIE: exit 1 at once; $FAKE_EXIT: the status after
SIGTERM (default 0). `report ...` runs the real gattemu ($GATTEMU_REAL_BIN)."""
import os
import signal
import subprocess
import sys
import tempfile

args = sys.argv[1:]
if args[:1] == ["report"]:
    os.execv(os.environ["GATTEMU_REAL_BIN"], [os.environ["GATTEMU_REAL_BIN"], *args])
if os.environ.get("FAKE_ARGV_LOG"):
    with open(os.environ["FAKE_ARGV_LOG"], "a") as log:
        log.write(" ".join(sys.argv[1:]) + "\n" + "token " + os.environ.get("GATTEMU_CONTROL_TOKEN", "") + "\n")
if os.environ.get("FAKE_DIE"):
    print("gattemu: no adapter hci9", file=sys.stderr)
    sys.exit(1)
port = args[args.index("--control") + 1].rsplit(":", 1)[1]
folder = tempfile.mkdtemp()
token_file = os.path.join(folder, "token")
with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write(os.environ["GATTEMU_CONTROL_TOKEN"] + "\n")
child = subprocess.Popen([os.environ["GATTEMU_FIXTURE"], "--profile", args[1], "--port", port, "--token-file",
                          token_file, "--events", "3"], stdout=subprocess.DEVNULL)


stopping = []


def stop(*_):
    stopping.append(True)
    child.terminate()


signal.signal(signal.SIGTERM, stop)
child.wait()
sys.exit(int(os.environ.get("FAKE_EXIT", "0")) if stopping else 2)
