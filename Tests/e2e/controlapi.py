"""gattemu's control API from an e2e test, through the Python client (clients/python, which conftest puts first on
sys.path): JSON in, (status, JSON) out; 4xx/5xx answers are returned, not raised.

`gattemu run` requires a token by default and keeps the one it makes where `gattemu ctl` finds it
(`$XDG_RUNTIME_DIR/gattemu/control-PORT.token`, else `/tmp/gattemu-UID/control-PORT.token`; docs/security.md).
`token(port)` finds it with the client's rule, and as root also in the folders of other users' runs
(test_nonroot). A test that means to send no token uses `gattemu.Client(url, "")`.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import gattemu
from gattemu.token import find_token, token_path as _token_path

PORT = 8765


def token_path(port: int, uid: int | None = None) -> Path:
    """Where the gattemu of user `uid` (default: this process's) on `port` keeps its token: the rule gattemu ctl uses."""
    return _token_path(port, uid)


def token(port: int, uid: int | None = None) -> str | None:
    """The token of the gattemu of user `uid` on `port`, None when it has no token file."""
    for owner in ([uid] if uid is not None else [None, *_other_owners(port)]):
        try:
            found = find_token(port, owner)
        except gattemu.TokenError:
            continue
        if found:
            return found
    return None


def _other_owners(port: int) -> list[int]:
    """As root, the tests also drive gattemu runs of other users (test_nonroot): any /tmp/gattemu-UID that has the port's file."""
    if os.geteuid() != 0:
        return []
    found = []
    for folder in Path("/tmp").glob("gattemu-[0-9]*"):
        if (folder / f"control-{port}.token").exists():
            found.append(int(folder.name.split("-", 1)[1]))
    return found


def client(port: int = PORT) -> gattemu.Client:
    """A client of the gattemu on 127.0.0.1:`port` with its token (none when it has no token file yet)."""
    return gattemu.Client(f"http://127.0.0.1:{port}", token(port) or "")


def call(method: str, path: str, body=None, port: int = PORT) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    answer = client(port).raw(method, path, data, headers={"Content-Type": "application/json"})
    return answer.status, answer.json()


async def api(method: str, path: str, body=None, port: int = PORT) -> tuple[int, dict]:
    return await asyncio.to_thread(call, method, path, body, port)


async def wait_for_api(peripheral, timeout: float = 60, port: int = PORT) -> dict:
    """Once the peripheral says it is ready, polls `GET /v1/status` until the API answers and gattemu advertises;
    returns that status. Fails with the peripheral's output if it exits or takes longer than `timeout` (each)."""
    await peripheral.wait_ready(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert peripheral.running, peripheral.output()
        try:
            status, body = await api("GET", "/v1/status", port=port)
            if status == 200 and body.get("advertising", {}).get("advertised"):
                return body
        except gattemu.ConnectionFailed:
            pass
        await asyncio.sleep(0.3)
    raise AssertionError(f"control API did not come up within {timeout}s ({peripheral.last_line()}):\n"
                         + peripheral.output())
