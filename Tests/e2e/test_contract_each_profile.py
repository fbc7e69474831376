"""schemathesis, every check, against the live control API of `gattemu run` with each shipped profile
(profiles/*.json) on the VM's bluetoothd, the token given explicitly with --control-token-file. Bounded so that
all profiles together take a few minutes: the fuzzing and stateful phases, GATTEMU_CONTRACT_EXAMPLES examples per
operation (default 2), the event stream left out (it never ends on a live gattemu; scripts/check-contract covers it
against the fixture, test_gattemu_contract.py runs the LEAF profile at length).

Before schemathesis, every service of the profile is hidden and shown again through the API, one by one and then
all at once: bluetoothd refuses a GATT application with no objects, and hiding a profile's last service once
answered 503 with the device left without its table (issue #27). Each must answer 200, the device must keep
advertising, and the table must be complete again at the end.

schemathesis itself runs on the host under scripts/e2e (contract.py), against the port forwarded out of the VM."""
from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.parse
from pathlib import Path

import gattemu
import pytest

from conftest import report
from contract import control_args, run_schemathesis

PORT = 8774  # scripts/e2e forwards it (--forward) for the host's schemathesis
EXAMPLES = int(os.environ.get("GATTEMU_CONTRACT_EXAMPLES", "2"))
ROOT = Path(__file__).resolve().parents[2]
PROFILES = sorted(p.name for p in (ROOT / "profiles").glob("*.json") if p.name != "schema.json")


def call(method: str, url: str, token: str, body: bytes | None = None) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    answer = gattemu.Client(f"{parts.scheme}://{parts.netloc}", token, environ={}).raw(method, path, body, timeout=20)
    return answer.status, answer.body


async def api(method: str, url: str, token: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    return await asyncio.to_thread(call, method, url, token, data)


async def wait_serving(p, url: str, token: str, timeout: float = 60.0) -> dict:
    """The status once gattemu serves it and says it is advertising (registered with bluetoothd)."""
    end = time.monotonic() + timeout
    last = ""
    while time.monotonic() < end:
        if not p.running:
            raise AssertionError(f"gattemu exited before serving its API:\n{p.tail()}")
        try:
            status, answer = await api("GET", url + "/v1/status", token)
            last = f"{status} {answer[:300]!r}"
            if status == 200:
                state = json.loads(answer)
                if state["advertising"].get("advertised"):
                    return state
        except gattemu.ConnectionFailed as e:
            last = str(e)
        await asyncio.sleep(0.5)
    raise AssertionError(f"gattemu not serving an advertising device within {timeout}s (last: {last}):\n{p.tail()}")


@pytest.mark.parametrize("profile", PROFILES)
async def test_schemathesis_finds_nothing_in_the_live_api_of_each_profile(profile, start_gattemu, tmp_path):
    token = "e2e-" + os.urandom(12).hex()
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    p = start_gattemu(profile, args=[*control_args(PORT), "--control-token-file", str(token_file)])
    url = f"http://127.0.0.1:{PORT}"
    started = time.monotonic()
    state = await wait_serving(p, url, token)
    services = [s["id"] for s in state["services"]]
    assert services, state

    # Every service hidden and shown again, one by one, then all of them (the last one hidden leaves no
    # application registered), then all shown again.
    for order in [[s] for s in services] + [services]:
        for sid in order:
            status, answer = await api("PUT", f"{url}/v1/services/{sid}", token, {"present": False})
            assert status == 200, f"hiding {sid}: {status} {answer[:500]!r}\n{p.tail()}"
        state = json.loads((await api("GET", url + "/v1/status", token))[1])
        assert [s["id"] for s in state["services"]] == [s for s in services if s not in order], state["services"]
        assert state["advertising"].get("advertised"), state["advertising"]
        for sid in order:
            status, answer = await api("PUT", f"{url}/v1/services/{sid}", token, {"present": True})
            assert status == 200, f"showing {sid}: {status} {answer[:500]!r}\n{p.tail()}"
    state = json.loads((await api("GET", url + "/v1/status", token))[1])
    assert [s["id"] for s in state["services"]] == services, state["services"]

    out = Path(os.environ["GATTEMU_OUT"])
    name = profile.removesuffix(".json")
    returncode, text = await run_schemathesis(PORT, token, f"live-{name}", EXAMPLES, tmp_path)
    (out / f"schemathesis-live-{name}.txt").write_text(text)
    assert returncode == 0, (f"schemathesis found problems with {profile} (exit {returncode}; all "
                             f"output: {out}/schemathesis-live-{name}.txt):\n{text[-12000:]}\n"
                             f"gattemu:\n{p.tail(60)}")
    counts = re.search(r"(\d+) generated, (\d+) passed", text)
    assert counts and counts.group(1) == counts.group(2) and int(counts.group(1)) > 0, text[-3000:]
    assert p.running, f"gattemu exited during the run:\n{p.tail()}"
    # Still serving, and once what the run left is undone (faults, behaviour, variant, services), advertising
    # with the whole table.
    for method, path, body in (("DELETE", "/v1/faults", None), ("POST", "/v1/reset", None),
                               ("PUT", "/v1/advertisement", {"variant": None})):
        status, answer = await api(method, url + path, token, body)
        assert status in (200, 201, 204), f"{method} {path}: {status} {answer[:300]!r}"
    for sid in services:
        status, answer = await api("PUT", f"{url}/v1/services/{sid}", token, {"present": True})
        assert status == 200, f"showing {sid}: {status} {answer[:300]!r}"
    state = json.loads((await api("GET", url + "/v1/status", token))[1])
    assert [s["id"] for s in state["services"]] == services and state["advertising"]["wanted"] is True, state
    report(f"schemathesis against the live API ({profile}): {counts.group(1)} cases, 0 failures, "
           f"{time.monotonic() - started:.0f} s; every service hidden and shown again")
