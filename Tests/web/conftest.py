"""Fixtures for the host-side browser tests (scripts/test, unit tier): headless Debian Chromium
(/usr/bin/chromium + /usr/bin/chromedriver, apt packages chromium and chromium-driver; no browser download)
driven by Selenium, against gattemu-control-fixture (Tests/ControlFixture: the real control server over a
never-started Emulator, no Bluetooth). Screenshots go to out/web/ (or $GATTEMU_WEB_OUT).

Environment: GATTEMU_FIXTURE (the fixture binary; default: `swift build --show-bin-path`), GATTEMU_BIN (the
gattemu binary for the report test; same default), CHROMIUM, CHROMEDRIVER.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("GATTEMU_WEB_OUT", ROOT / "out" / "web"))


def bin_path() -> Path:
    return Path(subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.strip())


@pytest.fixture(scope="session")
def binaries() -> dict[str, Path]:
    fixture = os.environ.get("GATTEMU_FIXTURE")
    gattemu = os.environ.get("GATTEMU_BIN")
    if not fixture or not gattemu:
        path = bin_path()
        fixture = fixture or str(path / "gattemu-control-fixture")
        gattemu = gattemu or str(path / "gattemu")
    for p in (fixture, gattemu):
        assert Path(p).exists(), f"{p} missing: run swift build --build-tests first"
    return {"fixture": Path(fixture), "gattemu": Path(gattemu)}


class Server:
    """gattemu-control-fixture on 127.0.0.1 (a free port) until stop()."""

    def __init__(self, binary: Path, *args: str):
        OUT.mkdir(parents=True, exist_ok=True)
        self.log = open(OUT / "fixture.log", "ab")
        self.process = subprocess.Popen([str(binary), *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline().decode()
        match = re.match(r"listening (http://\S+)", line)
        assert match, f"the fixture server did not start: {line!r}"
        self.url = match.group(1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture
def server_factory(binaries):
    servers: list[Server] = []

    def start(*args: str) -> Server:
        server = Server(binaries["fixture"], *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def make_browser(tmp: Path):
    """Headless Debian Chromium through chromedriver (also benchmarks/dashboard_bench.py's)."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1800", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves an org.chromium.Chromium.* directory in TMPDIR per session: in pytest's own temporary
    # directory, not in the machine's /tmp, where a CI rig's runs would pile them up.
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"),
                      env={**os.environ, "TMPDIR": str(tmp)})
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(20)
    return driver


@pytest.fixture
def browser(tmp_path):
    driver = make_browser(tmp_path)
    yield driver
    driver.quit()


def console_errors(driver) -> list[str]:
    """SEVERE console entries (script errors, CSP violations, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def screenshot(driver, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(OUT / f"{name}.png"))


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.05, what: str = "condition"):
    from selenium.common.exceptions import StaleElementReferenceException
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except StaleElementReferenceException:  # the page re-rendered what the predicate was reading: look again
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
