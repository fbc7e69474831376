"""schemathesis against the control API of a gattemu running in this VM: on the host when the sandbox reaches
its runner (GATTEMU_SCHEMATHESIS, set by scripts/e2e; Tests/e2e/schemathesis_host.py), through the port
`scripts/sandbox --forward` put there; otherwise here, from the venv. The command line is the runner's either way
(`schemathesis_host.argv_for`)."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import urllib.request
from pathlib import Path

from schemathesis_host import argv_for

HOST = os.environ.get("GATTEMU_SCHEMATHESIS")


def forwarded(port: int) -> str:
    """The host's address for the guest's 127.0.0.1:`port` (scripts/sandbox --forward)."""
    value = os.environ.get(f"GATTEMU_FORWARD_{port}")
    assert value, f"GATTEMU_SCHEMATHESIS without GATTEMU_FORWARD_{port}: run the sandbox with --forward {port}"
    return value


def control_args(port: int) -> list[str]:
    """gattemu's control API on the guest's loopback at `port`; when the host's schemathesis will call it, also
    the name it calls it by (--control-allow-host: gattemu answers only the Host names it serves)."""
    args = ["--control", f"127.0.0.1:{port}"]
    return args + ["--control-allow-host", forwarded(port)] if HOST else args


async def run_schemathesis(port: int, token: str, name: str, examples: int, cwd: Path,
                           timeout: int = 600) -> tuple[int, str]:
    """schemathesis, every check, the fuzzing and stateful phases, against the API at the guest's `port`; its JUnit
    report in $GATTEMU_OUT/schemathesis-`name`. Returns its exit code and output."""
    request = {"url": f"http://{forwarded(port)}" if HOST else f"http://127.0.0.1:{port}", "token": token,
               "name": name, "examples": examples, "phases": "fuzzing,stateful", "timeout": timeout}
    if HOST:
        def call() -> dict:
            post = urllib.request.Request(f"{HOST}/run", data=json.dumps(request).encode(), method="POST",
                                          headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(post, timeout=timeout + 60) as answer:
                return json.loads(answer.read())
        answer = await asyncio.to_thread(call)
        return answer["returncode"], answer["output"]
    argv, _ = argv_for(request, Path(os.environ["GATTEMU_OUT"]) / f"schemathesis-{name}")
    result = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=timeout,
                                     cwd=cwd, stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout + result.stderr
