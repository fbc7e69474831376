"""Fixtures for the gattemu e2e tests. Run inside scripts/sandbox, e.g.
    scripts/sandbox -- python -m pytest -q $GATTEMU_ROOT/Tests/e2e

Contract (env, set by the sandbox):
  GATTEMU_PERIPH, GATTEMU_PERIPH_ADDRESS  adapter (and its address) for the peripheral
  GATTEMU_CENTRAL                         adapter for the test central
  GATTEMU_CENTRAL_STACK                   bumble (default) | bluez
  GATTEMU_OUT, GATTEMU_ROOT               output dir, project dir
  GATTEMU_PERIPHERAL_CMD                  optional: command line that starts the
      peripheral under test, with {adapter} {name} {root} {profile} placeholders
      (default: the Python fixture peripheral; for gattemu e.g.
      "{root}/.build/debug/gattemu run {profile} --adapter {adapter}")
"""
from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from central import Central, open_central, stack_name  # noqa: E402

FIXTURE_CMD = f"{sys.executable} {HERE}/fixtures/peripheral.py --adapter {{adapter}} --name {{name}}"


def _require_sandbox():
    for v in ("GATTEMU_PERIPH", "GATTEMU_CENTRAL", "GATTEMU_OUT"):
        if not os.environ.get(v):
            pytest.exit(f"{v} not set: run the e2e tests inside scripts/sandbox", returncode=2)


class Peripheral:
    """A peripheral process under test, with its output in $GATTEMU_OUT."""

    def __init__(self, argv: list[str], name: str, log_path: Path):
        self.argv, self.name, self.log_path = argv, name, log_path
        self.proc: subprocess.Popen | None = None
        self._log = None

    def start(self) -> "Peripheral":
        self._log = open(self.log_path, "ab")
        self._log.write(f"=== {time.strftime('%T')} {shlex.join(self.argv)}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log:
            self._log.close()
            self._log = None
        return self.proc.returncode

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(scope="session")
def env() -> dict:
    _require_sandbox()
    return {k: v for k, v in os.environ.items() if k.startswith("GATTEMU_")}


@pytest.fixture(scope="session")
async def central(env) -> Central:
    c = await open_central()
    yield c
    print(f"\ncentral ({c.stack}): {c.stats.summary()}")
    await c.close()


@pytest.fixture
def start_peripheral(env, central, request):
    """Factory: start_peripheral(name=..., cmd=None, profile=None) -> Peripheral.

    Starts the peripheral command (GATTEMU_PERIPHERAL_CMD or the Python fixture)
    on $GATTEMU_PERIPH and stops it at teardown. Callers wait for it to show
    up with `await central.find(name=...)`.
    """
    started: list[Peripheral] = []
    out = Path(env["GATTEMU_OUT"])

    def start(name: str = "gattemu-fixture", cmd: str | None = None, profile: str | None = None,
              adapter: str | None = None) -> Peripheral:
        template = cmd or os.environ.get("GATTEMU_PERIPHERAL_CMD") or FIXTURE_CMD
        line = template.format(adapter=adapter or env["GATTEMU_PERIPH"], name=name,
                               root=env.get("GATTEMU_ROOT", ""), profile=profile or "")
        log = out / f"peripheral-{request.node.name}.log".replace("/", "_")
        p = Peripheral(shlex.split(line), name, log).start()
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


def bluetoothd(action: str, timeout: float = 90.0) -> None:
    """Control the peripheral-side bluetoothd (sandbox-bluetoothd start|stop|restart)."""
    root = os.environ["GATTEMU_ROOT"]
    subprocess.run([f"{root}/scripts/sandbox-bluetoothd", action], check=True, timeout=timeout)


@pytest.fixture
def needs_separate_stack(central):
    if central.stack != "bumble":
        pytest.skip("needs a central stack independent of the peripheral's bluetoothd "
                    "(GATTEMU_CENTRAL_STACK=bumble)")
