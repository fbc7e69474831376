"""`Device`: a `gattemu run` this process started (or one it attached to), with its client, its event log file
and its output; `start` waits until the device has started, `stop` ends it with SIGTERM and checks it exited 0."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional, Sequence

from .client import Client
from .errors import GattemuError

STOP_TIMEOUT = 15.0
"""How long `stop` waits after SIGTERM (gattemu unregisters from bluetoothd first) before SIGKILL."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Device(Client):
    """The control API of a running gattemu, plus what the plugin knows about it: `process` (None when attached),
    `events_file` (its `--events` file), `output_file` (its stdout and stderr), `binary`, `artifacts` (where a
    failing test's event log and report go)."""

    def __init__(self, url: str, token: str | None, *, binary: str | None = None, process=None,
                 events_file: Path | None = None, output_file: Path | None = None, timeout: float = 10.0):
        super().__init__(url, token, timeout=timeout)
        self.binary = binary
        self.artifacts: Optional[Path] = None
        self.process: Optional[subprocess.Popen] = process
        self.events_file = events_file
        self.output_file = output_file

    @classmethod
    def start(cls, binary: str, profile: str, *, adapter: str | None = None, port: int = 0,
              args: Sequence[str] = (), folder: Path, timeout: float = 60.0) -> "Device":
        """Runs `BINARY run PROFILE [--adapter A] --control 127.0.0.1:PORT --events FOLDER/events.jsonl ARGS...`
        with a fresh token in its environment (never on its command line), output in FOLDER/gattemu.log, and
        returns once its control API answers, which it does only after the device has started (503 before)."""
        folder.mkdir(parents=True, exist_ok=True)
        port = port or free_port()
        token = secrets.token_hex(32)
        events_file = folder / "events.jsonl"
        output_file = folder / "gattemu.log"
        argv = [binary, "run", profile, *(["--adapter", adapter] if adapter else []),
                "--control", f"127.0.0.1:{port}", "--events", str(events_file), *args]
        environment = {**os.environ, "GATTEMU_CONTROL_TOKEN": token}
        with open(output_file, "ab") as output:
            output.write(f"=== {time.strftime('%T')} {' '.join(argv)}\n".encode())
            output.flush()
            try:
                process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=environment, start_new_session=True)
            except OSError as error:
                raise GattemuError(f"cannot run {binary}: {error}") from None
        device = cls(f"http://127.0.0.1:{port}", token, binary=binary, process=process, events_file=events_file,
                     output_file=output_file)
        try:
            device.wait_ready(timeout, alive=device._exited)
        except GattemuError as error:
            device.stop(check=False)
            raise GattemuError(f"gattemu did not start: {error}\n{device.output_tail()}") from None
        return device

    def _exited(self) -> Optional[str]:
        if self.process is not None and self.process.poll() is not None:
            return f"{self.binary} exited with {self.process.returncode} before it started"
        return None

    def output_tail(self, lines: int = 30) -> str:
        """The last lines of gattemu's output (empty when attached)."""
        if self.output_file is None or not self.output_file.exists():
            return ""
        with open(self.output_file, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * 1024))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])

    def stop(self, check: bool = True) -> Optional[int]:
        """SIGTERM, wait up to `STOP_TIMEOUT` s (then SIGKILL); with `check`, an exit status other than 0 raises
        `GattemuError` with the end of its output. Returns the status (None when attached)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                if check:
                    raise GattemuError(f"gattemu did not stop within {STOP_TIMEOUT:g} s of SIGTERM (killed)\n"
                                       f"{self.output_tail()}")
        status = self.process.returncode
        if check and status != 0:
            raise GattemuError(f"gattemu exited with {status} (expected 0 after SIGTERM)\n{self.output_tail()}")
        return status
