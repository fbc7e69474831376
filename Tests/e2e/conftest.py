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
      Used by the sandbox self-tests (test_sandbox.py).
  GATTEMU_BIN                             optional: the gattemu binary under test (scripts/test: the
      packaged release build, out/package/gattemu); default {root}/.build/debug/gattemu
  GATTEMU_CMD                             optional: how the gattemu tests
      (test_gattemu_*.py) start gattemu, same placeholders; default
      "GATTEMU_BIN run {profile} --adapter {adapter}".
      A missing binary, or one without a `run` subcommand, fails them (it is
      never a skip: a green run must mean gattemu was tested).
  GATTEMU_LONG                            1: long/soak variants (scripts/test --long)
  GATTEMU_BLUEZ                           the VM's peripheral-side bluetoothd: 5.66 (system,
      default) or 5.82 (scripts/build-bluez). Per test: the `bluez_582` fixture, or
      `bluez` parametrized indirectly, or `with use_bluez("5.82"):`.
  GATTEMU_CENTRAL2, GATTEMU_CENTRAL3 (+ _ADDRESS)  extra controllers for more centrals
      (open_central(adapter=..., address=...)), when the VM brought them up.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The Python client of this tree (clients/python), whatever copy the venv has installed; pytest.ini blocks the
# installed copy's plugin (`-p no:gattemu`): the suite drives gattemu through controlapi.py.
sys.path.insert(0, str(HERE.parents[1] / "clients" / "python"))

from central import Central, amgmt, open_central, stack_name  # noqa: E402

FIXTURE_CMD = f"{sys.executable} {HERE}/fixtures/peripheral.py --adapter {{adapter}} --name {{name}}"
GATTEMU_CMD = "{bin} run {profile} --adapter {adapter}"
LONG = os.environ.get("GATTEMU_LONG", "") not in ("", "0")
SUMMARY: list[str] = []  # lines shown at the end of the run (report(...))
BLUEZ_SWITCHED: dict[str, list[str]] = {}  # BlueZ version -> tests that switched to it


def report(line: str) -> None:
    """Print now (visible with -s) and again in the closing summary."""
    print(line)
    SUMMARY.append(line)


def pytest_terminal_summary(terminalreporter):
    if os.environ.get("GATTEMU_PERIPH"):
        SUMMARY.insert(0, f"bluetoothd: BlueZ {os.environ.get('GATTEMU_BLUEZ') or '5.66'} (VM default)"
                       + "".join(f"; BlueZ {v} for {len(t)} test(s): {', '.join(t)}"
                                 for v, t in BLUEZ_SWITCHED.items()))
    if SUMMARY:
        terminalreporter.section("e2e numbers")
        for line in SUMMARY:
            terminalreporter.write_line(line)


def _require_sandbox():
    for v in ("GATTEMU_PERIPH", "GATTEMU_CENTRAL", "GATTEMU_OUT"):
        if not os.environ.get(v):
            pytest.exit(f"{v} not set: run the e2e tests inside scripts/sandbox", returncode=2)


class Peripheral:
    """A peripheral process under test, with its output in $GATTEMU_OUT.

    `ready(output)` says when it is registered and advertising (gattemu logs `started` once its GATT
    application and advertisements are registered); `advertising()` waits for it before scanning."""

    def __init__(self, argv: list[str], name: str, log_path: Path, ready=None):
        self.argv, self.name, self.log_path, self.ready = argv, name, log_path, ready
        self.events: Path | None = None  # gattemu's --events file, when start_gattemu chose it
        self.proc: subprocess.Popen | None = None
        self._log = None

    def start(self) -> "Peripheral":
        self._log = open(self.log_path, "ab")
        self._offset = self._log.tell()  # output() shows only this process's part
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
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(getattr(self, "_offset", 0))
            return f.read().decode(errors="replace")

    async def output_when(self, ready, timeout: float = 5.0) -> str:
        """The output once `ready(output)` holds (gattemu writes its log in batches, up to 50 ms
        late, when stdout is not a terminal), or as it is after `timeout`."""
        end = time.monotonic() + timeout
        while True:
            out = self.output()
            if ready(out) or time.monotonic() >= end:
                return out
            await asyncio.sleep(0.05)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def last_line(self) -> str:
        """The process's last output line (or that it printed nothing): pytest's short summary, all a CI log may
        keep, shows only a failure's first line, so that line says where the process was."""
        lines = self.output().splitlines()[1:]  # [0] is start()'s "=== time argv" header
        return f"last line {lines[-1].strip()!r}" if lines else "no output at all"

    async def wait_ready(self, timeout: float = 60.0) -> None:
        """Returns once the process says it is registered (or at once without a `ready` test); fails
        with its output if it exits first or takes longer than `timeout`."""
        if self.ready is None:
            return
        end = time.monotonic() + timeout
        while not self.ready(self.output()):
            if not self.running:
                raise AssertionError(f"{self.argv[0]} exited with {self.proc.returncode} before it was ready "
                                     f"({self.last_line()}); output:\n{self.tail()}")
            if time.monotonic() >= end:
                raise AssertionError(f"{self.argv[0]} not ready within {timeout}s ({self.last_line()}); "
                                     f"output:\n{self.tail()}")
            await asyncio.sleep(0.05)

    async def advertising(self, central: Central, timeout: float = 60.0, **match):
        """central.find(**match) once the process is ready, but fail at once (with the process output)
        if the process exits before it is seen."""
        await self.wait_ready(timeout)
        end = time.monotonic() + timeout
        while True:
            if not self.running:
                raise AssertionError(f"{self.argv[0]} exited with {self.proc.returncode} before it was "
                                     f"seen advertising; output:\n{self.tail()}")
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no advertisement matching {match} within {timeout}s; "
                                     f"peripheral output:\n{self.tail()}")
            try:
                return await central.find(timeout=min(left, 8.0), **match)
            except TimeoutError:
                pass


@pytest.fixture(scope="session")
def env() -> dict:
    _require_sandbox()
    return {k: v for k, v in os.environ.items() if k.startswith("GATTEMU_")}


@pytest.fixture(scope="session")
async def central(env) -> Central:
    c = await open_central()
    yield c
    report(f"central ({c.stack}), whole run: {c.stats.summary()}")
    await c.close()


def _is_gattemu(argv: list[str]) -> bool:
    return any(Path(a).name == "gattemu" for a in argv[:1]) and argv[1:2] in (["run"], ["relay"])


def gattemu_ready(output: str) -> bool:
    """gattemu logs `started` (text or JSON) once its application and advertisements are registered."""
    return " started " in output or '"event":"started"' in output


async def _connections(index: str) -> list[tuple[str, str]]:
    """(address, btmgmt address type) of the links of controller `index`, as the kernel knows them."""
    from central import amgmt
    try:
        out = await amgmt("--index", index, "con", timeout=10)
    except Exception:  # noqa: BLE001 - a controller taken by the Bumble user channel answers nothing
        return []
    links = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].count(":") == 5 and parts[1] == "type":
            kind = " ".join(parts[2:])
            links.append((parts[0], "2" if "Random" in kind else "1" if "LE" in kind else "0"))
    return links


def _link_count(index: str) -> int | None:
    """How many links controller `index` has, from the kernel (ioctl HCIGETCONNLIST on an HCI socket): asked before
    and after every test, where btmgmt's start took ~0.4 s under TCG. None when the kernel does not say."""
    import fcntl
    import socket
    import struct
    hcigetconnlist = 0x800448D4  # _IOR('H', 212, int)
    try:
        with socket.socket(socket.AF_BLUETOOTH, socket.SOCK_RAW, socket.BTPROTO_HCI) as sock:
            request = bytearray(struct.pack("<HH", int(index), 16) + bytes(16 * 16))
            fcntl.ioctl(sock, hcigetconnlist, request, True)
            return struct.unpack_from("<HH", request)[1]
    except (OSError, ValueError, AttributeError):
        return None


async def clean_radio(central: Central) -> None:
    """No link may outlive a test: the central drops its links, and any link the peripheral's
    controller still has is disconnected and waited out. A test that starts on a link left by the one
    before it sees the previous peripheral's GATT database (or bluetoothd's without any application)."""
    from central import amgmt
    await central.disconnect_all()
    index = os.environ.get("GATTEMU_PERIPH", "").removeprefix("hci")
    if not index or _link_count(index) == 0:
        return
    end = time.monotonic() + 15
    while links := await _connections(index):
        if time.monotonic() >= end:
            raise AssertionError(f"links still up on hci{index} after 15 s: {links}")
        for address, kind in links:
            with contextlib.suppress(Exception):
                await amgmt("--index", index, "disconnect", "-t", kind, address, timeout=10)
        await asyncio.sleep(0.2)


@pytest.fixture
async def start_peripheral(env, central, request):
    """Factory: start_peripheral(name=..., cmd=None, profile=None) -> Peripheral.

    Starts the peripheral command (GATTEMU_PERIPHERAL_CMD or the Python fixture)
    on $GATTEMU_PERIPH and stops it at teardown. Callers wait for it to show
    up with `await p.advertising(central, ...)` (which, for gattemu, first waits
    until it is registered). Every test starts and ends with a clean radio: no
    link from the central, none left on the peripheral's controller.
    """
    started: list[Peripheral] = []
    out = Path(env["GATTEMU_OUT"])
    await clean_radio(central)
    # The central's own HCI capture of the test, as a phone would take it (btsnoop_hci.log); scripts/e2e checks
    # it against what the central did, with tshark on the host (python3 Tests/e2e/captures.py).
    capture = None
    if getattr(central, "stack", "") == "bumble":
        capture = central.record(out / f"central-{request.node.name}.btsnoop".replace("/", "_"), check="later")

    def start(name: str = "gattemu-fixture", cmd: str | None = None, profile: str | None = None,
              adapter: str | None = None, extra_args: list[str] | tuple = ()) -> Peripheral:
        template = cmd or os.environ.get("GATTEMU_PERIPHERAL_CMD") or FIXTURE_CMD
        line = template.format(adapter=adapter or env["GATTEMU_PERIPH"], name=name,
                               root=env.get("GATTEMU_ROOT", ""), profile=profile or "")
        log = out / f"peripheral-{request.node.name}.log".replace("/", "_")
        argv = shlex.split(line) + list(extra_args)
        p = Peripheral(argv, name, log, ready=gattemu_ready if _is_gattemu(argv) else None).start()
        started.append(p)
        return p

    yield start
    # A relay first: it would connect to its device again as soon as the links below are dropped.
    for p in started:
        if p.argv[1:2] == ["relay"]:
            p.stop()
    # Links first, then the peripherals: stopping a peripheral under a live link leaves the link to
    # the next test.
    try:
        await clean_radio(central)
    finally:
        for p in started:
            p.stop()
        if capture is not None:
            capture.close()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for index, p in enumerate(started):
            print(f"\n--- output of {shlex.join(p.argv)} ({p.log_path}):\n{p.tail(60)}")
            events = getattr(p, "events", None)
            if events is not None and events.exists() and events.stat().st_size > 0:
                html = out / f"report-{request.node.name}{'-' + str(index) if index else ''}.html".replace("/", "_")
                made = subprocess.run([p.argv[0], "report", str(events), "-o", str(html)], capture_output=True, text=True,
                                      timeout=120, stdin=subprocess.DEVNULL)
                print(f"--- its event log as HTML: {html}" if made.returncode == 0
                      else f"--- gattemu report {events} failed ({made.returncode}): {made.stderr.strip()}")


# Seconds each test takes in the sandbox (setup, call and teardown), measured: Tests/e2e/durations.json, written by
# `python3 scripts/test_times.py durations` from the last run's out/test-times.json. Used only to balance the shards
# of `scripts/e2e --shards N`: a test not listed counts as the average of its file's listed tests (or
# UNLISTED_SECONDS); a wrong figure makes one VM finish later, it never leaves a test out.
DURATIONS_FILE = HERE / "durations.json"
UNLISTED_SECONDS = 20.0


def measured_seconds() -> dict[str, float]:
    import json
    try:
        return {k: float(v) for k, v in json.loads(DURATIONS_FILE.read_text()).get("tests", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _kept_together(item) -> str | None:
    """The file whose tests must run in one VM: one with a module-scoped fixture (shared state between its tests)."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in (getattr(info, "name2fixturedefs", None) or {}).values():
        if defs and defs[-1].scope in ("module", "package"):
            return item.path.name
    return None


def shard_of_tests(tests: list[tuple[str, str | None]], shards: int, seconds: dict[str, float]) -> dict[str, int]:
    """Each test (node id, and the file it must stay with, if any) given to one of `shards` VMs (0-based): the
    longest group first to the least loaded VM, a group being one test or a kept-together file's tests."""
    by_file: dict[str, list[float]] = {}
    for nodeid, value in seconds.items():
        by_file.setdefault(nodeid.split("::")[0], []).append(value)

    def weight(nodeid: str) -> float:
        if nodeid in seconds:
            return seconds[nodeid]
        known = by_file.get(nodeid.split("::")[0])
        return sum(known) / len(known) if known else UNLISTED_SECONDS

    groups: dict[str, list[str]] = {}
    for nodeid, together in tests:
        groups.setdefault(together or nodeid, []).append(nodeid)
    loads = [0.0] * shards
    owner: dict[str, int] = {}
    for key in sorted(groups, key=lambda g: (-sum(weight(t) for t in groups[g]), g)):
        k = min(range(shards), key=lambda k: (loads[k], k))
        for nodeid in groups[key]:
            owner[nodeid] = k
        loads[k] += sum(weight(t) for t in groups[key])
    return owner


def _select_shard(config, items) -> None:
    """GATTEMU_E2E_SHARD=K/N (scripts/e2e --shards N): keep shard K's tests, deselect the rest."""
    spec = os.environ.get("GATTEMU_E2E_SHARD", "")
    if not spec:
        return
    k, _, n = spec.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise pytest.UsageError(f"GATTEMU_E2E_SHARD={spec!r}: expected K/N with 1 <= K <= N")
    owner = shard_of_tests([(item.nodeid, _kept_together(item)) for item in items], int(n), measured_seconds())
    keep = [item for item in items if owner[item.nodeid] == int(k) - 1]
    dropped = [item for item in items if owner[item.nodeid] != int(k) - 1]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    report(f"shard {spec}: {len(keep)} tests from {len({item.path.name for item in keep})} files")


def _leave_out_without_controllers(config, items):
    """Tests marked needs_controllers(n) run only in a VM with that many controllers (GATTEMU_CONTROLLERS=n: the
    peripheral, the central and GATTEMU_CENTRAL2 … GATTEMU_CENTRAL{n-2}); with fewer they are left out of the run and
    named in the summary (scripts/test --long and --full boot seven)."""
    if not os.path.isdir("/run/gattemu"):
        return  # collected outside the sandbox (--collect-only on the host): nothing is run there anyway
    left_out = []
    for item in items:
        marker = item.get_closest_marker("needs_controllers")
        if marker is None:
            continue
        wanted = int(marker.args[0])
        names = ["GATTEMU_PERIPH", "GATTEMU_CENTRAL"] + [f"GATTEMU_CENTRAL{n}" for n in range(2, wanted - 1)]
        if not all(os.environ.get(name) for name in names):
            left_out.append(item)
    _leave_out(config, items, left_out, "this VM has too few controllers (GATTEMU_CONTROLLERS=7, scripts/test --long)")


def _leave_out_unless_long(config, items):
    """Tests marked long (a fixed wait of their own: a kernel timer run out) run only with GATTEMU_LONG=1
    (scripts/test --long and --full); otherwise they are left out of the run and named in the summary, as the tests
    a VM cannot run are: scripts/test's default tier stays inside its time budget."""
    if LONG or not os.path.isdir("/run/gattemu"):
        return
    left_out = [item for item in items if item.get_closest_marker("long") is not None]
    _leave_out(config, items, left_out, "a long test (GATTEMU_LONG=1, scripts/test --long)")


def _leave_out(config, items, left_out, why: str) -> None:
    """Takes `left_out` out of the run as deselected and names them in the summary with `why`."""
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
        report(f"not run, {why}: {', '.join(item.nodeid for item in left_out)}")


def kernel_version(release: str) -> tuple[int, int]:
    """(major, minor) of a kernel release such as 6.12.95+deb12-amd64; (0, 0) when it says none."""
    numbers = re.findall(r"\d+", release)[:2]
    return (int(numbers[0]), int(numbers[1])) if len(numbers) == 2 else (0, 0)


def _leave_out_on_older_kernels(config, items):
    """Tests marked needs_kernel(major, minor) run only on a guest kernel at least that new (the sandbox boots
    Debian 12's 6.1 unless GATTEMU_KVER says otherwise; scripts/test --long runs them on the newest installed, a
    bookworm-backports 6.12 that scripts/bootstrap installs then); on an older one they are left out of the run and
    named in the summary."""
    if not os.path.isdir("/run/gattemu"):
        return
    release = os.uname().release
    left_out = [item for item in items if (marker := item.get_closest_marker("needs_kernel")) is not None
                and kernel_version(release) < (int(marker.args[0]), int(marker.args[1]))]
    _leave_out(config, items, left_out,
               f"this VM's kernel {release} is older than they need (GATTEMU_KVER=newest, scripts/test --long)")


def pytest_collection_modifyitems(config, items):
    """Tests that switch bluetoothd to another BlueZ version run last: BlueZ 5.82 leaves the
    controller's settings changed for the 5.66 that follows (seen: 5.66 then advertised from a
    random address), so every other test sees the VM's controller as booted. After them come the
    tests marked `ends_its_vm`, whose bluetoothd restart may leave the guest's kernel unable to
    run bluetoothd again (docs/sandbox.md): no other test shares that VM after them."""
    _leave_out_without_controllers(config, items)
    _leave_out_on_older_kernels(config, items)
    _leave_out_unless_long(config, items)
    _select_shard(config, items)
    switching = {"bluez", "bluez_582"}
    items.sort(key=lambda item: (bool(item.get_closest_marker("ends_its_vm")),
                                 bool(item.get_closest_marker("switches_bluez")
                                      or switching & set(getattr(item, "fixturenames", ())))))


# The sandbox kills COMMAND at GATTEMU_TIMEOUT seconds of the VM's uptime, and pytest's closing summary (the
# tracebacks of every failure and error) would die with it. Past this many seconds before that, each test left
# fails at setup instead, so the run ends with its summary and says which tests it never ran.
TIME_MARGIN = 300.0


def _uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    limit = os.environ.get("GATTEMU_TIMEOUT", "")
    if not limit.isdigit() or not os.path.isdir("/run/gattemu"):
        return
    left = int(limit) - 20 - _uptime()
    if left < TIME_MARGIN:
        pytest.fail(f"not run: {left:.0f} s of the sandbox's {limit} s were left (the suite stops {TIME_MARGIN:.0f} s "
                    f"early so that its summary is printed); the suite is too slow for its timeout", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


# Where the suite's time goes (scripts/test puts it into out/test-times.json and its summary): each test's setup,
# call and teardown, and how long the VM took to get to pytest (kernel boot, bus, radio, bluetoothd).
DURATIONS: dict[str, float] = {}
SESSION_STARTED: dict[str, float] = {}


def pytest_sessionstart(session):
    SESSION_STARTED["monotonic"] = time.monotonic()
    if os.path.isdir("/run/gattemu"):
        SESSION_STARTED["uptime"] = _uptime()


def pytest_runtest_logreport(report):
    DURATIONS[report.nodeid] = DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("GATTEMU_OUT")
    if not out or not os.path.isdir(out) or not DURATIONS:
        return
    import json
    record = {
        "shard": os.environ.get("GATTEMU_E2E_SHARD", "1/1"),
        "bring_up_s": round(SESSION_STARTED.get("uptime", 0.0), 1),
        "pytest_s": round(time.monotonic() - SESSION_STARTED.get("monotonic", time.monotonic()), 1),
        "exit": int(exitstatus),
        "tests": {k: round(v, 2) for k, v in sorted(DURATIONS.items(), key=lambda kv: -kv[1])},
    }
    with contextlib.suppress(OSError):
        Path(out, "e2e-durations.json").write_text(json.dumps(record, indent=1) + "\n")
    if os.path.isdir("/run/gattemu"):
        # The guest kernel's whole log, each test's start marked in it (test_named_in_the_kernel_log).
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            kernel = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout
            Path(out, "kernel.log").write_text(kernel)


def _gattemu_template() -> str:
    binary = os.environ.get("GATTEMU_BIN") or "{root}/.build/debug/gattemu"
    return os.environ.get("GATTEMU_CMD") or GATTEMU_CMD.replace("{bin}", shlex.quote(binary))


@pytest.fixture(scope="session")
def gattemu_bin(env, tmp_path_factory) -> str:
    """Path of the gattemu binary under test; fails the test when it is not
    built or predates the `run` subcommand. The binary is copied to the VM's
    tmpfs once: the project and output shares are uncached 9p, where each start re-reads it."""
    path = shlex.split(_gattemu_template())[0].format(root=env.get("GATTEMU_ROOT", ""))
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} not built (swift build): the gattemu tests cannot run", pytrace=False)
    try:
        r = subprocess.run([path, "run", "--help"], capture_output=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        text = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        text = str(e)
    if "run" not in text or "--adapter" not in text:
        pytest.fail(f"{path} has no `run` subcommand: not the gattemu under test\n{text[:500]}", pytrace=False)
    copy = tmp_path_factory.mktemp("bin") / "gattemu"
    shutil.copy2(path, copy)
    return str(copy)


def profile_path(profile: str) -> str:
    """`noke-lock.json` -> the shipped profile; anything with a slash as given."""
    if "/" in profile:
        return profile
    return f"{os.environ['GATTEMU_ROOT']}/profiles/{profile}"


@pytest.fixture
def start_gattemu(gattemu_bin, start_peripheral, env, tmp_path):
    """Factory: start_gattemu("noke-lock.json", "variables.hardwareCode=2P", args=[...])
    -> Peripheral running `gattemu run PROFILE --adapter $GATTEMU_PERIPH [--set ...] [args]`.

    Unless `args` has its own `--events`, gattemu also writes its event log to a file in the VM's /tmp;
    `p.events` is the one it writes. When the test fails, start_peripheral turns it into $GATTEMU_OUT/report-TEST.html
    (`gattemu report`)."""
    count = 0

    def start(profile: str, *sets: str, args: list[str] | tuple = (), adapter: str | None = None,
              name: str = "gattemu") -> Peripheral:
        nonlocal count
        extra = [x for s in sets for x in ("--set", s)] + list(args)
        if "--events" in extra[:-1]:
            events = Path(extra[extra.index("--events") + 1])
        else:
            count += 1
            events = tmp_path / f"events-{count}.jsonl"
            extra += ["--events", str(events)]
        rest = _gattemu_template().split(None, 1)[1:]
        cmd = " ".join([shlex.quote(gattemu_bin), *rest])
        p = start_peripheral(name=name, cmd=cmd, profile=profile_path(profile), adapter=adapter, extra_args=extra)
        p.events = events
        return p

    return start


def bluetoothd_running() -> bool:
    """What `sandbox-bluetoothd status` says (its pid file names a live process), without starting a shell: this is
    asked after every test, and under TCG a shell and its tools took ~1.5 s."""
    try:
        os.kill(int(Path("/run/gattemu/bluetoothd.pid").read_text().split()[0]), 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


@pytest.fixture(autouse=True)
def test_named_in_the_kernel_log(request):
    """Each test's name goes into the guest kernel's log (/dev/kmsg) as it starts, so that a kernel warning or oops
    in out/.../kernel.log (written at the end of the session) says which test it happened in."""
    if os.path.isdir("/run/gattemu"):
        with contextlib.suppress(OSError):
            # <7>: debug level, below the console's: in the log (dmesg), not in the VM's console output.
            Path("/dev/kmsg").write_text(f"<7>gattemu-e2e: {request.node.nodeid}\n")
    yield


@pytest.fixture(autouse=True)
def bluetoothd_outlives_the_test(request):
    """A peripheral-side bluetoothd that died during a test (it crashed, or the test left it stopped) fails
    that test, with the end of its log, and is started again: one crash must not fail every test after it."""
    yield
    root = os.environ.get("GATTEMU_ROOT")
    if not root or not os.path.isdir("/run/gattemu"):
        return
    ctl = f"{root}/scripts/sandbox-bluetoothd"
    if bluetoothd_running():
        return
    log = Path(os.environ.get("GATTEMU_OUT", "/nonexistent")) / "bluetoothd.log"
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log.exists() else "(no log)"
    # How it ended, when the kernel saw it: a fatal signal is logged there ("bluetoothd[PID]: segfault at …").
    kernel = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout.splitlines()
    kernel = [line for line in kernel if "bluetoothd" in line][-5:]
    report(f"bluetoothd DIED during {request.node.name}; started again for the tests after it"
           + "".join(f"\n  kernel: {line}" for line in kernel))
    subprocess.run([ctl, "start"], timeout=120)
    pytest.fail(f"the peripheral-side bluetoothd is not running after this test; the kernel's log of it: {kernel}; "
                f"its log ends:\n{tail}")


def bluetoothd(action: str, timeout: float = 90.0) -> None:
    """Control the peripheral-side bluetoothd (sandbox-bluetoothd start|stop|restart)."""
    root = os.environ["GATTEMU_ROOT"]
    subprocess.run([f"{root}/scripts/sandbox-bluetoothd", action], check=True, timeout=timeout)


@pytest.fixture
def single_att_channel(tmp_path_factory):
    """bluetoothd restarted with `[GATT] Channels = 1` for the test (no EATT), then as before. gattemu relay needs it
    where order matters: with EATT, bluetoothd as a central spreads write commands over several ATT channels and
    the device receives them out of order (docs/relay.md). List it before the fixtures that start peripherals."""
    yield from one_att_channel(tmp_path_factory)


def one_att_channel(tmp_path_factory):
    """bluetoothd restarted with `[GATT] Channels = 1`, yielding its main.conf; restarted as before at the end."""
    conf = tmp_path_factory.mktemp("bluetoothd") / "main.conf"
    conf.write_text("[Policy]\nAutoEnable=true\n\n[GATT]\nChannels = 1\n")
    os.environ["GATTEMU_BLUETOOTHD_CONF"] = str(conf)
    try:
        bluetoothd("restart")
        yield conf
    finally:
        os.environ.pop("GATTEMU_BLUETOOTHD_CONF", None)
        bluetoothd("restart")


ECRED = "/sys/module/bluetooth/parameters/enable_ecred"


def kernel_has_enhanced_channels() -> bool:
    """Whether this kernel's enhanced credit-based channels are on (Linux 6.2 and later by default; 6.1 has them off
    unless a test turns them on). bluetoothd's EATT bearers use them where they are on, plain LE credit-based channels
    where not."""
    try:
        return Path(ECRED).read_text().strip() == "Y"
    except OSError:
        return False


@pytest.fixture
def relay_single_att_channel(tmp_path_factory):
    """For a relay in front of a gattemu device: on a kernel with enhanced credit-based channels on, bluetoothd
    restarted with `[GATT] Channels = 1` for the test (as docs/relay.md asks of relay machines); elsewhere nothing
    (no restart). In the sandbox the device and the relay's upstream are two adapters of one bluetoothd 5.66: both
    sides open enhanced EATT bearers to each other, the requests cross, and the upstream's discovery stalls or its
    reads get no reply (docs/sandbox.md, "Kernels"). List it before the fixtures that start peripherals."""
    if not kernel_has_enhanced_channels():
        yield None
        return
    yield from one_att_channel(tmp_path_factory)


def bluez_version() -> str:
    """Version of the running peripheral-side bluetoothd, e.g. "5.66" or "5.82"."""
    root = os.environ["GATTEMU_ROOT"]
    r = subprocess.run([f"{root}/scripts/sandbox-bluetoothd", "version"], capture_output=True,
                       text=True, timeout=30)
    return r.stdout.split()[0] if r.returncode == 0 and r.stdout.strip() else "stopped"


def bluez_available(version: str) -> bool:
    if version in ("5.66", "system", "default"):
        return True
    cache = os.environ.get("GATTEMU_CACHE", "/var/cache/gattemu")
    return os.access(f"{cache}/bluez-{version}/libexec/bluetooth/bluetoothd", os.X_OK)


@contextlib.contextmanager
def use_bluez(version: str, who: str = ""):
    """Run the peripheral-side bluetoothd of BlueZ `version` (restarting it if it
    differs) for the body, then the VM's default again. Start gattemu inside the
    body (a running gattemu survives the restarts, it registers again). Skips
    when the version is not built or the central depends on bluetoothd."""
    if stack_name() != "bumble":
        pytest.skip("switching bluetoothd needs the Bumble central (GATTEMU_CENTRAL_STACK=bumble)")
    if not bluez_available(version):
        pytest.skip(f"BlueZ {version} not built (scripts/build-bluez)")
    if version == "system":
        version = "5.66"
    root = os.environ["GATTEMU_ROOT"]
    ctl = f"{root}/scripts/sandbox-bluetoothd"
    subprocess.run([ctl, "use", version], check=True, timeout=120)
    running = bluez_version()
    print(f"bluetoothd: BlueZ {running} for {who or 'this block'}")
    BLUEZ_SWITCHED.setdefault(running, []).append(who or "?")
    try:
        yield running
    finally:
        subprocess.run([ctl, "use", "default"], check=True, timeout=120)


@pytest.fixture
def bluez(request):
    """The BlueZ version of the peripheral-side bluetoothd during this test.
    Unparametrized: whatever runs (GATTEMU_BLUEZ). Parametrized indirectly, it
    switches for the test and back afterwards:
        @pytest.mark.parametrize("bluez", ["5.66", "5.82"], indirect=True)
        async def test_x(bluez, central, start_gattemu): ...
    List it before start_gattemu/start_peripheral so the peripheral stops first."""
    want = getattr(request, "param", None)
    if want is None:
        yield bluez_version()
        return
    with use_bluez(want, request.node.name) as running:
        yield running


@pytest.fixture
def bluez_582(request):
    """This test runs against BlueZ 5.82's bluetoothd (per-central AcquireNotify
    sockets, WriteValue `type`, confirmations on the notify socket); back to the
    VM's default afterwards. Skips when 5.82 is not built."""
    with use_bluez("5.82", request.node.name) as running:
        yield running


@pytest.fixture
def needs_separate_stack(central):
    if central.stack != "bumble":
        pytest.skip("needs a central stack independent of the peripheral's bluetoothd "
                    "(GATTEMU_CENTRAL_STACK=bumble)")


# Controller plan of the relay tests (issue 29). The sandbox brings up GATTEMU_PERIPH and GATTEMU_CENTRAL and, with
# its patched btvirt (five controllers), GATTEMU_CENTRAL2 and GATTEMU_CENTRAL3, all four driven by bluetoothd until a
# Bumble stack takes one through the HCI user channel. The relay needs two that bluetoothd drives: its upstream
# (central towards the device) and its mirror (the peripheral the phone sees).
#
#                      device is gattemu (start_gattemu)    device is Bumble (start_bumble_device)
#   device             GATTEMU_PERIPH (bluetoothd)          GATTEMU_CENTRAL3 (Bumble, user channel)
#   relay upstream     GATTEMU_CENTRAL2 (bluetoothd)        GATTEMU_CENTRAL2 (bluetoothd)
#   relay mirror       GATTEMU_CENTRAL3 (bluetoothd)        GATTEMU_PERIPH (bluetoothd)
#   test central       GATTEMU_CENTRAL (Bumble)             GATTEMU_CENTRAL (Bumble)
CONTROLLER_PLAN = {
    "gattemu": {"device": "GATTEMU_PERIPH", "upstream": "GATTEMU_CENTRAL2", "mirror": "GATTEMU_CENTRAL3"},
    "bumble": {"device": "GATTEMU_CENTRAL3", "upstream": "GATTEMU_CENTRAL2", "mirror": "GATTEMU_PERIPH"},
}
BUMBLE_DEVICE = HERE / "fixtures" / "bumble_device.py"


def relay_controllers(device: str) -> dict[str, str]:
    """The controllers (hciN) of a relay test whose real device is `device` ("gattemu" or "bumble"), by role:
    device, upstream, mirror, central (CONTROLLER_PLAN). Skips the test, naming what is missing, when the VM did
    not bring them up (GATTEMU_BTVIRT=system exports no extra controllers)."""
    roles = {**CONTROLLER_PLAN[device], "central": "GATTEMU_CENTRAL"}
    missing = sorted({var for var in roles.values() if not os.environ.get(var)})
    if missing:
        pytest.skip(f"the {device} relay layout needs {', '.join(missing)} (the sandbox's patched btvirt, "
                    f"GATTEMU_CONTROLLERS >= 5); this VM has none")
    return {role: os.environ[var] for role, var in roles.items()}


def bumble_device_ready(output: str) -> bool:
    return "bumble-device: ready " in output


async def controller_powered(adapter: str) -> bool:
    """bluetoothd (or anyone) has `adapter` powered: btmgmt's current settings say so."""
    from central import amgmt
    try:
        out = await amgmt("--index", adapter.removeprefix("hci"), "info", timeout=10)
    except Exception:  # noqa: BLE001 - a controller held by a user channel does not answer
        return False
    return any(line.strip().startswith("current settings:") and " powered" in f" {line.split(':', 1)[1]}"
               for line in out.splitlines())


async def give_back(adapter: str, timeout: float = 20.0) -> None:
    """Powers `adapter` on again once a Bumble stack let go of it (bluetoothd sees the index again, powered off),
    so the tests after it find the controller as the VM brought it up."""
    from central import amgmt
    end = time.monotonic() + timeout
    while not await controller_powered(adapter):
        if time.monotonic() >= end:
            raise AssertionError(f"{adapter} not powered again within {timeout}s after the Bumble device let go of it")
        with contextlib.suppress(Exception):
            await amgmt("--index", adapter.removeprefix("hci"), "power", "on", timeout=10)
        await asyncio.sleep(0.3)


@pytest.fixture
async def start_bumble_device(env, central, start_peripheral):
    """Factory: start_bumble_device(name="BumbleDev", secure=False, seed=1, passkey=None) -> Peripheral running
    fixtures/bumble_device.py, a BLE peripheral gattemu did not write, on the Bumble device's controller of
    CONTROLLER_PLAN (GATTEMU_CENTRAL3; skips when the VM has none). `await p.advertising(central, name=...)` waits
    for its ready line, then for its advertisement. At teardown it stops and the controller goes back to
    bluetoothd, powered, and the controllers bluetoothd drives forget any bond with it (the device keeps its keys in
    memory only: a bond left behind would make the next test's link fail with "key missing")."""
    adapter = relay_controllers("bumble")["device"]
    started: list[Peripheral] = []

    def start(name: str = "BumbleDev", secure: bool = False, seed: int = 1, passkey: str | None = None) -> Peripheral:
        cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(BUMBLE_DEVICE))} --adapter {{adapter}} --name {{name}}"
        extra = ["--seed", str(seed)] + (["--secure"] if secure else []) + (["--passkey", passkey] if passkey else [])
        p = start_peripheral(name=name, cmd=cmd, adapter=adapter, extra_args=extra)
        p.ready = bumble_device_ready
        started.append(p)
        return p

    yield start
    if started:
        await central.disconnect_all()
        for p in started:
            p.stop()
        await give_back(adapter)
        address = os.environ.get(f"{CONTROLLER_PLAN['bumble']['device']}_ADDRESS", "")
        for role in ("upstream", "mirror"):
            index = os.environ.get(CONTROLLER_PLAN["bumble"][role], "").removeprefix("hci")
            if address and index.isdigit():
                await amgmt("--index", index, "unpair", "-t", "1", address)
