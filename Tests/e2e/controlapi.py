"""gattemu's control API from an e2e test: JSON in, (status, JSON) out; 4xx/5xx answers are returned, not raised.

`gattemu run` requires a token by default and keeps the one it makes where `gattemu ctl` finds it
(`$XDG_RUNTIME_DIR/gattemu/control-PORT.token`, else `/tmp/gattemu-UID/control-PORT.token`; docs/security.md).
The tests find it the same way: `install_token_opener()` (conftest calls it) makes every `urllib` request to
127.0.0.1 carry the token of the gattemu on that port, unless the request has its own `Authorization` header.
A test that means to send no token uses `urllib.request.build_opener()`, which has no such handler.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

PORT = 8765


def token_path(port: int, uid: int | None = None) -> Path:
    """Where the gattemu of user `uid` (default: this process's) on `port` keeps its token: the rule gattemu ctl uses."""
    me = os.geteuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "") if uid in (None, me) else ""
    folder = Path(runtime) / "gattemu" if runtime.startswith("/") else Path(f"/tmp/gattemu-{me if uid is None else uid}")
    return folder / f"control-{port}.token"


def token(port: int, uid: int | None = None) -> str | None:
    """The token of the gattemu of user `uid` on `port`, None when it has no token file."""
    for owner in ([uid] if uid is not None else [None, *_other_owners(port)]):
        try:
            return token_path(port, owner).read_text().splitlines()[0]
        except (FileNotFoundError, IndexError):
            continue
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


class _TokenHandler(urllib.request.BaseHandler):
    def http_request(self, request):
        url = urllib.parse.urlsplit(request.full_url)
        if url.hostname in ("127.0.0.1", "localhost", "::1") and not request.has_header("Authorization"):
            found = token(url.port or 80)
            if found:
                request.add_unredirected_header("Authorization", f"Bearer {found}")
        return request


def install_token_opener() -> None:
    urllib.request.install_opener(urllib.request.build_opener(_TokenHandler()))


def call(method: str, path: str, body=None, port: int = PORT) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


async def api(method: str, path: str, body=None, port: int = PORT) -> tuple[int, dict]:
    return await asyncio.to_thread(call, method, path, body, port)


async def wait_for_api(peripheral, timeout: float = 30, port: int = PORT) -> dict:
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
        except (urllib.error.URLError, ConnectionError):
            pass
        await asyncio.sleep(0.3)
    raise AssertionError("control API did not come up:\n" + peripheral.output())
