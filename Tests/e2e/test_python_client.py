"""docs/ci.md's example test (clients/python/examples/test_leaf_example.py), run as the doc's reader runs it: a fresh
venv, `pip install clients/python` and pytest (offline: the wheels scripts/bootstrap keeps in
/var/cache/gattemu/wheels; civenv.py, on the host when scripts/e2e runs the suite), then pytest on exactly that
file, the plugin starting `gattemu run` on the peripheral's adapter. This test's central plays the app under test:
it finds the touched reader, subscribes to the data characteristic, writes dUID + AUTH_REQ and must receive the
reader's first answer cut to 3 bytes by the example's fault. The example passes only if it saw that write and that fault, and gattemu exited 0 afterwards."""
from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import civenv
from conftest import report
from flows import LEAF_DATA, LEAF_TOUCH_SERVICE, Inbox, leaf_frame, leaf_write, quiet

ROOT = Path(os.environ.get("GATTEMU_ROOT", Path(__file__).resolve().parents[2]))
EXAMPLE = ROOT / "clients" / "python" / "examples" / "test_leaf_example.py"


async def test_the_ci_example_passes_in_a_fresh_venv(central, start_peripheral, gattemu_bin, env, tmp_path):
    made_outside = os.environ.get("GATTEMU_CI_VENV")
    if made_outside:  # scripts/e2e made it for this run, on the host (civenv.py)
        venv, where = Path(made_outside), "made on the host for this run"
        assert (venv / "bin" / "python").exists(), f"GATTEMU_CI_VENV={venv}: no venv there"
        await asyncio.to_thread(civenv.check, venv)
    else:
        venv = tmp_path / "venv"
        where = f"made in the VM in {await asyncio.to_thread(civenv.make, venv):.0f} s"

    out = Path(env["GATTEMU_OUT"])
    junit = out / "ci-example-junit.xml"
    log = open(out / "ci-example.log", "w")
    example = subprocess.Popen(
        [str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(EXAMPLE),
         "--gattemu-binary", gattemu_bin, "--gattemu-adapter", env["GATTEMU_PERIPH"],
         "--gattemu-artifacts", str(out / "ci-example"), f"--junitxml={junit}"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def output() -> str:
        log.flush()
        return (out / "ci-example.log").read_text(errors="replace")[-6000:]

    try:
        # The app: it sees the touched reader (the example fires `touch`, then installs its fault), connects and
        # starts the handshake.
        deadline = time.monotonic() + 180
        while True:
            assert example.poll() is None, f"the example exited ({example.returncode}) before the central wrote:\n{output()}"
            assert time.monotonic() < deadline, f"the touched reader was not seen:\n{output()}"
            try:
                adv = await central.find(service_uuid=LEAF_TOUCH_SERVICE, timeout=8)
                break
            except TimeoutError:
                pass
        conn = await central.connect(adv.address)
        try:
            data = Inbox("data", quiet)
            await conn.subscribe(LEAF_DATA, data)
            await leaf_write(conn, leaf_frame(1, 0, secrets.token_bytes(8)) + leaf_frame(2, 1, secrets.token_bytes(16)), quiet)
            first = await data.get()
        finally:
            await conn.disconnect()
        assert len(first) == 3 and first[:2] == bytes([0x81, 0x03]), first.hex()  # AUTH_RSP, cut to 3 bytes

        status = await asyncio.to_thread(example.wait, 120)
    finally:
        if example.poll() is None:
            example.kill()
            example.wait()
        log.close()
    text = (out / "ci-example.log").read_text(errors="replace")
    assert status == 0, f"the example failed (exit {status}):\n{text[-6000:]}"
    assert "1 passed" in text, text[-3000:]
    cases = list(ElementTree.parse(junit).iter("testcase"))
    assert [c.get("name") for c in cases] == ["test_the_app_writes_its_first_frame_after_a_touch"]
    report(f"CI example (clients/python/examples/test_leaf_example.py): fresh venv + pip install ({where}), "
           f"passed; the central got AUTH_RSP cut to {len(first)} bytes")
