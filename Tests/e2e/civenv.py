"""docs/ci.md's reader's setup: a fresh venv, `pip install clients/python` and pytest, offline from the wheels
scripts/bootstrap keeps (GATTEMU_WHEELS). Tests/e2e/test_python_client.py runs the doc's example with it.

scripts/e2e makes it on the host before the VMs start (`python3 Tests/e2e/civenv.py DIR`; under TCG pip took
200 s of the suite) in the run's output directory, which the VM sees at the same path, and names it in
GATTEMU_CI_VENV; without that the test makes its own in the VM. Debian's /usr/bin/python3, the same file inside
the VM (the host's root is the VM's)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("GATTEMU_ROOT", Path(__file__).resolve().parents[2]))
WHEELS = Path(os.environ.get("GATTEMU_WHEELS", "/var/cache/gattemu/wheels"))


def run(argv: list, timeout: float) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))}: exit {result.returncode}\n"
                           f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def make(venv: Path) -> float:
    """A fresh venv at `venv` (replacing one there) with the client and pytest installed; the seconds it took.
    Raises with pip's output when it cannot."""
    if not list(WHEELS.glob("pytest-*.whl")):
        raise RuntimeError(f"no pytest wheel in {WHEELS}: run scripts/bootstrap")
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="gattemu-client-") as tmp:
        # `pip install clients/python` from a copy: setuptools builds in place, and the project is read-only in the VM.
        source = Path(tmp) / "python"
        shutil.copytree(ROOT / "clients" / "python", source,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        run(["/usr/bin/python3", "-m", "venv", venv], 300)
        run([venv / "bin" / "pip", "install", "-q", "--disable-pip-version-check", "--no-cache-dir",
             "--no-index", "--find-links", WHEELS, source, "pytest"], 900)
    check(venv)
    return time.monotonic() - started


def check(venv: Path) -> None:
    """Raises unless `venv`'s python imports the client from `venv` itself (the fresh venv's copy, not the tree's
    or the suite's venv's)."""
    installed = run([venv / "bin" / "python", "-c", "import gattemu; print(gattemu.__file__)"], 120).stdout.strip()
    if not installed.startswith(str(venv)):
        raise RuntimeError(f"gattemu imported from {installed}, not from {venv}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: civenv.py DIR")
    try:
        seconds = make(Path(sys.argv[1]).resolve())
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"civenv: {e}")
    print(f"civenv: {sys.argv[1]}: fresh venv with the Python client and pytest in {seconds:.0f} s")
