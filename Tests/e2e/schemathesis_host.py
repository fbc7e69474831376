"""schemathesis for the sandbox, run on the host: Python under TCG spent most of the live-API tests' time
starting and running schemathesis itself, while gattemu, the thing judged, answered in milliseconds.

`python3 schemathesis_host.py --out DIR` serves one operation on this host's loopback, at a free port it writes to
DIR/schemathesis-host.port: `POST /run` with a JSON body
    {"url": "http://127.0.0.1:PORT", "token": "...", "name": "live-bleproof", "examples": 2,
     "phases": "fuzzing,stateful", "timeout": 600}
runs `schemathesis run URL/v1/openapi.json` with every check against that URL (a guest port that
`scripts/sandbox --forward` put on this host), its JUnit report in DIR/schemathesis-NAME, and answers
{"returncode": N, "output": "..."}. scripts/e2e starts it and gives it to the VM with `scripts/sandbox --reach`;
the guest side is `contract.run_schemathesis`.

Anyone on this machine can reach a loopback port, so nothing in the body reaches a command line unchecked: the
URL is a loopback one, the name and token are plain words, the numbers are bounded, and as root schemathesis
runs as nobody.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

VENV = Path(os.environ.get("GATTEMU_VENV", "/var/cache/gattemu/venv"))
URL = re.compile(r"http://127\.0\.0\.1:[0-9]{1,5}")
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{1,256}")
PHASES = {"fuzzing,stateful", "fuzzing", "stateful"}
MAX_BODY = 4096
NOBODY = 65534


class Refused(Exception):
    pass


def argv_for(request: dict, report_dir: Path) -> tuple[list[str], int]:
    """The schemathesis command line for a request body, and its timeout; Refused if anything is off."""
    if not isinstance(request, dict):
        raise Refused("the body is not a JSON object")
    url, token, name = request.get("url"), request.get("token"), request.get("name")
    examples, timeout, phases = request.get("examples", 2), request.get("timeout", 600), request.get("phases")
    if not (isinstance(url, str) and URL.fullmatch(url)):
        raise Refused("url: expected http://127.0.0.1:PORT")
    if not (isinstance(token, str) and TOKEN.fullmatch(token)):
        raise Refused("token: expected a bearer token of letters, digits and ._~+/=-")
    if not (isinstance(name, str) and NAME.fullmatch(name)):
        raise Refused("name: expected lower-case letters, digits and -")
    if phases not in PHASES:
        raise Refused(f"phases: one of {sorted(PHASES)}")
    for key, value, top in (("examples", examples, 200), ("timeout", timeout, 1800)):
        if type(value) is not int or not 1 <= value <= top:
            raise Refused(f"{key}: an integer from 1 to {top}")
    argv = [str(VENV / "bin" / "schemathesis"), "run", f"{url}/v1/openapi.json", "--url", url, "--checks", "all",
            "--header", f"Authorization: Bearer {token}", "--exclude-path", "/v1/events/stream",
            # Each device's copies of the routes (/v1/devices/{device}/...) are the same handlers: scripts/check-contract
            # judges them on a rig; the live API here is judged at its own paths and its device list.
            "--exclude-path-regex", "^/v1/devices/",
            "--phases", phases, "--max-examples", str(examples), "--seed", "1", "--generation-database", "none",
            "--request-timeout", "20", "--report", "junit", "--report-dir", str(report_dir), "--no-color"]
    return argv, timeout


def run(request: dict, out: Path) -> dict:
    """Runs one request's schemathesis in a directory of its own (nobody's, as root), then copies its report to
    OUT/schemathesis-NAME: nobody may not be able to write to OUT."""
    with tempfile.TemporaryDirectory(prefix="schemathesis-") as cwd:
        report_dir = Path(cwd) / "report"
        argv, timeout = argv_for(request, report_dir)
        if os.geteuid() == 0:
            os.chown(cwd, NOBODY, NOBODY)
            argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all", "--",
                    *argv]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cwd, "LANG": "C.UTF-8"}
        try:
            done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=timeout)
            answer = {"returncode": done.returncode, "output": done.stdout + done.stderr}
        except subprocess.TimeoutExpired as e:
            text = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            answer = {"returncode": -1, "output": text + f"\nschemathesis_host: killed after {timeout} s"}
        if report_dir.is_dir():
            shutil.copytree(report_dir, out / f"schemathesis-{request['name']}", dirs_exist_ok=True)
        return answer


def handler(out: Path, port: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            # Only a client that asked for this very address (no page of another origin rebinding a name).
            if self.path != "/run" or self.headers.get("Host") != f"127.0.0.1:{port}":
                return self.answer(404, {"error": "POST /run on 127.0.0.1 only"})
            length = self.headers.get("Content-Length", "")
            if not length.isdigit() or int(length) > MAX_BODY:
                return self.answer(413, {"error": f"a body of at most {MAX_BODY} bytes, with its length"})
            try:
                request = json.loads(self.rfile.read(int(length)))
                return self.answer(200, run(request, out))
            except (ValueError, Refused) as e:
                return self.answer(400, {"error": str(e)})

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's name
            sys.stderr.write("schemathesis_host: " + format % args + "\n")

    return Handler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the reports go; the port file too")
    args = parser.parse_args()
    if not (VENV / "bin" / "schemathesis").exists():
        print(f"schemathesis_host: no schemathesis in {VENV} (scripts/bootstrap installs it)", file=sys.stderr)
        return 1
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        print("schemathesis_host: as root it runs schemathesis as nobody, with setpriv (util-linux)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    server = HTTPServer(("127.0.0.1", 0), None)
    port = server.server_address[1]
    server.RequestHandlerClass = handler(args.out, port)
    (args.out / "schemathesis-host.port").write_text(f"{port}\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
