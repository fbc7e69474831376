"""gattemu's control API from an e2e test: JSON in, (status, JSON) out; 4xx/5xx answers are returned, not raised."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

PORT = 8765


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
