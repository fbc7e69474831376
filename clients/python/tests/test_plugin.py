"""The pytest plugin, run by pytester: `gattemu_device` started (a stand-in `gattemu` serving the control fixture,
tests/fake_gattemu.py) or attached, stopped with SIGTERM and its exit status checked, faults for a `with` block,
and a failing test's event log and `gattemu report` HTML named in its report and its JUnit XML properties."""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PLUGIN = ["-p", "no:gattemu", "-p", "gattemu.pytest_plugin", "-p", "no:cacheprovider"]

PASSING = """
import pytest
from gattemu import match

pytestmark = pytest.mark.gattemu(profile="PROFILE", args=["--seed", "7"])

def test_device(gattemu_device):
    assert gattemu_device.status()["deviceName"].startswith("NOKE")
    with gattemu_device.fault(on="notify", characteristic="tx", drop=True) as fault:
        assert [f["id"] for f in gattemu_device.list_faults()["faults"]] == [fault["id"]]
    assert gattemu_device.list_faults()["faults"] == []
    gattemu_device.notify("tx", b"\\x01")
    assert gattemu_device.wait_for(match("notify", characteristic="tx", value=b"\\x01"), timeout=5).seq > 3
"""

FAILING = """
from gattemu import match

def test_central_never_writes(gattemu_device):
    gattemu_device.notify("tx", hex="5160")
    gattemu_device.wait_for(match("write", characteristic="rx", value="ffff"), timeout=0.5)
"""


@pytest.fixture
def fake(binaries, monkeypatch, tmp_path) -> Path:
    """The stand-in gattemu, with the environment it reads; returns the file its argv lines go to."""
    argv_log = tmp_path / "argv.log"
    monkeypatch.setenv("GATTEMU_FIXTURE", str(binaries["fixture"]))
    monkeypatch.setenv("GATTEMU_REAL_BIN", str(binaries["gattemu"]))
    monkeypatch.setenv("FAKE_ARGV_LOG", str(argv_log))
    monkeypatch.setenv("PYTHONPATH", str(HERE.parent))
    assert binaries["gattemu"].exists(), "gattemu missing: run swift build --build-tests first"
    return argv_log


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_example=source.replace("PROFILE", str(ROOT / "profiles" / "noke-lock.json")))
    return pytester.runpytest(*PLUGIN, f"--gattemu-binary={HERE / 'fake_gattemu.py'}", *args)


def test_started_with_the_markers_profile_stopped_cleanly(pytester, fake):
    result = run(pytester, PASSING, "--gattemu-adapter=hci7", "--gattemu-arg=--set", "--gattemu-arg=variables.x=1")
    result.assert_outcomes(passed=1)
    command_line, token_line = fake.read_text().splitlines()
    argv = command_line.split()
    assert argv[:2] == ["run", str(ROOT / "profiles" / "noke-lock.json")]
    assert argv[argv.index("--adapter") + 1] == "hci7"
    assert argv[argv.index("--control") + 1].startswith("127.0.0.1:")
    assert "--events" in argv and argv[-4:] == ["--set", "variables.x=1", "--seed", "7"]
    token = token_line.removeprefix("token ")
    assert len(token) == 64 and token not in command_line  # in the environment, not on the command line


def test_a_device_that_does_not_exit_0_fails_the_teardown(pytester, fake, monkeypatch):
    monkeypatch.setenv("FAKE_EXIT", "3")
    result = run(pytester, PASSING)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*gattemu exited with 3 (expected 0 after SIGTERM)*"])


def test_a_device_that_cannot_start_fails_the_setup_with_its_output(pytester, fake, monkeypatch):
    monkeypatch.setenv("FAKE_DIE", "1")
    result = run(pytester, PASSING, "--gattemu-start-timeout=20")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*gattemu did not start*exited with 1*", "*gattemu: no adapter hci9*"])


def test_without_a_profile_the_fixture_says_what_it_needs(pytester, fake):
    pytester.makepyfile(test_x="def test_x(gattemu_device):\n    pass\n")
    result = pytester.runpytest(*PLUGIN, f"--gattemu-binary={HERE / 'fake_gattemu.py'}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*needs a profile*"])


def test_a_failing_test_keeps_the_event_log_and_report(pytester, fake, tmp_path):
    artifacts = tmp_path / "artifacts"
    junit = tmp_path / "junit.xml"
    result = run(pytester, FAILING, "--gattemu-profile", str(ROOT / "profiles" / "noke-lock.json"),
                 f"--gattemu-artifacts={artifacts}", f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no event matching write on rx with value ffff within 0.5 s*",
                                 "*- gattemu -*", "events: *events.jsonl", "report: *report.html",
                                 "last * events:", "  #* notify tx 5160*"])
    (folder,) = artifacts.iterdir()
    assert "test_central_never_writes" in folder.name
    events = (folder / "events.jsonl").read_text().splitlines()
    assert len(events) >= 4 and '"event":"notify"' in events[-1]
    assert "<html" in (folder / "report.html").read_text().lower()
    properties = {p.get("name"): p.get("value") for p in ElementTree.parse(junit).iter("property")}
    assert properties == {"gattemu_events": str(folder / "events.jsonl"), "gattemu_report": str(folder / "report.html")}


def test_a_passing_test_keeps_nothing(pytester, fake, tmp_path):
    artifacts = tmp_path / "artifacts"
    run(pytester, PASSING, f"--gattemu-artifacts={artifacts}").assert_outcomes(passed=1)
    assert not list(artifacts.glob("*/report.html"))


def test_attached_to_a_running_gattemu(pytester, noke, fake):
    result = run(pytester, FAILING, f"--gattemu-url={noke.url}", f"--gattemu-token={noke.token}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["events: *events.jsonl", "  #* notify tx 5160*"])
    assert noke.process.poll() is None  # attached: not stopped by the plugin
