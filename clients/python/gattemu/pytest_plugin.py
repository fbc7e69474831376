"""pytest plugin (entry point `pytest11` `gattemu`): the fixture `gattemu_device` starts `gattemu run` (or attaches
to a running one) for a test, yields a `Device` (a `Client` with `fault()`, `wait_for()`, ...), and stops it with
SIGTERM afterwards, failing the test's teardown unless it exits 0. When the test fails, its event log and the
`gattemu report` HTML of it are kept and named in the test's report (a `gattemu` section) and as JUnit XML
properties (`gattemu_events`, `gattemu_report`).

Settings, first found first: the `gattemu` marker's keywords (`profile`, `adapter`, `args`), command-line options,
ini options, environment (`GATTEMU_BIN`):

    --gattemu-binary / gattemu_binary      gattemu to run (default: `gattemu` on PATH)
    --gattemu-profile / gattemu_profile    profile to run (relative paths: from the directory pytest runs in)
    --gattemu-adapter / gattemu_adapter    --adapter for gattemu run (default: gattemu's choice)
    --gattemu-port / gattemu_port          control port (default: a free one)
    --gattemu-arg ARG (repeatable)         more arguments for gattemu run (`--set variables.x=1`, `--seed 7`)
    --gattemu-url, --gattemu-token         attach to a running gattemu instead (token as gattemu ctl finds it
                                           when not given)
    --gattemu-artifacts / gattemu_artifacts  where failing tests' events and reports go (default: the test's
                                           tmp_path)
    --gattemu-start-timeout                seconds to wait for the device to start (default 60)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterator, Optional

import pytest

from .device import Device
from .events import Event
from .errors import GattemuError

DEVICE = pytest.StashKey[Device]()
EXCERPT_EVENTS = 20
"""How many of the last events the failing test's report section shows."""

_OPTIONS = [
    ("binary", "gattemu binary to run (default: $GATTEMU_BIN or gattemu on PATH)"),
    ("profile", "profile for gattemu run"),
    ("adapter", "adapter for gattemu run (--adapter)"),
    ("port", "control API port (default: a free one)"),
    ("artifacts", "folder for failing tests' event logs and reports (default: the test's tmp_path)"),
    ("start-timeout", "seconds to wait for the device to start (default 60)"),
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gattemu", "gattemu emulated BLE peripheral")
    for name, text in _OPTIONS:
        group.addoption(f"--gattemu-{name}", dest=f"gattemu_{name.replace('-', '_')}", default=None, help=text)
        parser.addini(f"gattemu_{name.replace('-', '_')}", text, default=None)
    group.addoption("--gattemu-arg", dest="gattemu_args", action="append", default=[],
                    help="one more argument for gattemu run (repeatable)")
    group.addoption("--gattemu-url", dest="gattemu_url", default=None,
                    help="attach to the gattemu whose control API is at this URL instead of starting one")
    group.addoption("--gattemu-token", dest="gattemu_token", default=None,
                    help="its token (default: as gattemu ctl finds it)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gattemu(profile=None, adapter=None, args=()): how gattemu_device runs gattemu")


def _setting(request: pytest.FixtureRequest, name: str, environment: str | None = None) -> Optional[str]:
    marker = request.node.get_closest_marker("gattemu")
    if marker is not None and marker.kwargs.get(name) is not None:
        return str(marker.kwargs[name])
    key = f"gattemu_{name.replace('-', '_')}"
    value = request.config.getoption(key) or request.config.getini(key)
    if value:
        return str(value)
    return os.environ.get(environment) if environment else None


def _profile_path(request: pytest.FixtureRequest, profile: str) -> str:
    path = Path(profile)
    if not path.is_absolute():
        path = request.config.invocation_params.dir / path
    if not path.exists():
        raise pytest.UsageError(f"gattemu profile {profile} not found (looked at {path})")
    return str(path)


@pytest.fixture
def gattemu_device(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Device]:
    """A running gattemu: started with the profile from the `gattemu` marker or `--gattemu-profile`, or the one at
    `--gattemu-url`. Yields a `Device` (a `gattemu.Client`); stopped with SIGTERM after the test (exit 0 required)."""
    url = request.config.getoption("gattemu_url")
    artifacts = _setting(request, "artifacts")
    folder = Path(artifacts) / re.sub(r"[^\w.-]+", "_", request.node.nodeid)[-120:] if artifacts else tmp_path
    timeout = float(_setting(request, "start-timeout") or 60)
    binary = _setting(request, "binary", "GATTEMU_BIN") or shutil.which("gattemu") or "gattemu"
    if url:
        device = Device(url, request.config.getoption("gattemu_token"), binary=binary)
        device.wait_ready(timeout)
    else:
        profile = _setting(request, "profile")
        if not profile:
            raise pytest.UsageError("gattemu_device needs a profile: @pytest.mark.gattemu(profile=...) or "
                                    "--gattemu-profile (or --gattemu-url to attach to a running gattemu)")
        marker = request.node.get_closest_marker("gattemu")
        args = [*request.config.getoption("gattemu_args"), *((marker.kwargs.get("args") or ()) if marker else ())]
        try:
            device = Device.start(binary, _profile_path(request, profile), adapter=_setting(request, "adapter"),
                                  port=int(_setting(request, "port") or 0), args=args, folder=folder, timeout=timeout)
        except GattemuError as error:
            pytest.fail(str(error), pytrace=False)
    device.artifacts = folder
    request.node.stash[DEVICE] = device
    yield device
    try:
        device.stop(check=True)
    except GattemuError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    device = item.stash.get(DEVICE, None)
    if device is None or report.when != "call" or not report.failed:
        return
    try:
        lines, properties = attach(device)
    except Exception as error:  # noqa: BLE001 - a report that cannot be made must not hide the test's failure
        lines, properties = [f"could not keep gattemu's event log: {error}"], []
    report.sections.append(("gattemu", "\n".join(lines)))
    for name, value in properties:
        report.user_properties.append((name, value))
        item.user_properties.append((name, value))


def attach(device: Device) -> tuple[list[str], list[tuple[str, str]]]:
    """Keeps the event log (gattemu's `--events` file, or the API's events when attached) and its `gattemu
    report` HTML in the device's artifacts folder; returns the report section's lines and the JUnit properties."""
    folder: Path = device.artifacts
    folder.mkdir(parents=True, exist_ok=True)
    events_file = device.events_file
    if events_file is None or not events_file.exists():
        events_file = folder / "events.jsonl"
        page = device.events(since=0, limit=10000)
        with open(events_file, "w", encoding="utf-8") as f:
            for event in page["events"]:
                f.write(json.dumps(event, separators=(",", ":")) + "\n")
    lines = [f"events: {events_file}"]
    properties = [("gattemu_events", str(events_file))]
    html = folder / "report.html"
    if device.binary and (shutil.which(device.binary) or Path(device.binary).exists()):
        made = subprocess.run([device.binary, "report", str(events_file), "-o", str(html)], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        if made.returncode == 0:
            lines.append(f"report: {html}")
            properties.append(("gattemu_report", str(html)))
        else:
            lines.append(f"gattemu report failed ({made.returncode}): {made.stderr.strip()[:300]}")
    last = _last_events(events_file, EXCERPT_EVENTS)
    lines.append(f"last {len(last)} events:")
    lines += [f"  {event.describe()}" for event in last]
    tail = device.output_tail(10)
    if tail:
        lines += ["gattemu output (end):", *(f"  {line}" for line in tail.splitlines())]
    return lines, properties


def _last_events(path: Path, count: int) -> list[Event]:
    """The last `count` events of a JSON-lines file, reading at most its last 1 MiB."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 1024 * 1024))
        text = f.read().decode("utf-8", "replace")
    events = []
    for line in text.splitlines()[-count:]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(Event(value))
    return events
