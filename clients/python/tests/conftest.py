"""Fixtures for the client's tests: this tree's `gattemu` package (first on sys.path, whatever the venv has) against
gattemu-control-fixture (Tests/ControlFixture: the real control server over a never-started emulator, no
Bluetooth). Environment: GATTEMU_FIXTURE (the fixture binary), GATTEMU_BIN (gattemu, for `report`); default:
`swift build --show-bin-path`."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parents[1]
sys.path.insert(0, str(PACKAGE))

pytest_plugins = ["pytester"]


def _bin_path() -> Path:
    return Path(subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.strip())


@pytest.fixture(scope="session")
def binaries() -> dict[str, Path]:
    fixture, gattemu = os.environ.get("GATTEMU_FIXTURE"), os.environ.get("GATTEMU_BIN")
    if not fixture or not gattemu:
        path = _bin_path()
        fixture = fixture or str(path / "gattemu-control-fixture")
        gattemu = gattemu or str(path / "gattemu")
    assert Path(fixture).exists(), f"{fixture} missing: run swift build --build-tests first"
    return {"fixture": Path(fixture), "gattemu": Path(gattemu)}


class Fixture:
    """gattemu-control-fixture on 127.0.0.1 (a free port), its token in a mode-600 file, until stop()."""

    def __init__(self, binary: Path, tmp: Path, *args: str):
        self.token = "client-test-token-0123456789"
        self.token_file = tmp / "token"
        self.token_file.write_text(self.token + "\n")
        self.token_file.chmod(0o600)
        self.log = open(tmp / "fixture.log", "ab")
        self.process = subprocess.Popen([str(binary), "--token-file", str(self.token_file), *args], cwd=ROOT,
                                        stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline().decode()
        match = re.match(r"listening (http://\S+)", line)
        assert match, f"the fixture server did not start: {line!r}"
        self.url = match.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture
def fixture_factory(binaries, tmp_path):
    started: list[Fixture] = []

    def start(*args: str, profile: str = "profiles/noke-lock.json") -> Fixture:
        folder = tmp_path / f"fixture{len(started)}"
        folder.mkdir()
        server = Fixture(binaries["fixture"], folder, "--profile", profile, *args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def noke(fixture_factory) -> Fixture:
    return fixture_factory("--events", "5")


@pytest.fixture
def leaf(fixture_factory) -> Fixture:
    return fixture_factory(profile="profiles/leaf-reader.json")
