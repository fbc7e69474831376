"""The dashboard (served by `gattemu run` at /) in headless Chromium, while the test central runs the LEAF flow
against gattemu on the virtual radio.

The browser runs outside the VM when the sandbox offers one (scripts/sandbox --webdriver --forward 8772, as
scripts/e2e starts it): Debian's chromium on the host, driven through the host's chromedriver
(GATTEMU_WEBDRIVER), opens the dashboard through the forwarded port (GATTEMU_FORWARD_8772), as a user's browser
opens a rig's dashboard through a tunnel: gattemu is told that name with --control-allow-host. Under TCG a
Chromium inside the VM took minutes per page and, with a second VM beside it, never answered (CI, 2026-11-27).
Without them (a plain scripts/sandbox run) Chromium runs inside the VM: Debian's chromium and chromium-driver
from the host's root and selenium in the venv; no browser is downloaded. Chromium runs headless with
--no-sandbox and its own profile directory (on the host as nobody: scripts/sandbox). Screenshots:
$GATTEMU_OUT/dashboard-*.png.

Selenium calls block, so they run in threads (asyncio.to_thread): the central's stack shares the event loop.
"""
from __future__ import annotations

import asyncio
import base64
import os
import secrets
import subprocess
import tempfile
import time
from pathlib import Path


from conftest import report
from controlapi import token
from flows import LEAF_DATA, LEAF_SERVICE, LEAF_TOUCH_SERVICE, Inbox, leaf_frame, leaf_parse

PROFILE = "leaf-reader.json"
PORT = 8772
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
# The host's chromedriver (scripts/sandbox --webdriver), when the browser runs outside the VM.
REMOTE = os.environ.get("GATTEMU_WEBDRIVER")


def leaf_name() -> str:
    return "ETHS" + os.environ["GATTEMU_PERIPH_ADDRESS"].replace(":", "").upper()


def say(line):
    print(f"central: {line}")


def dashboard(port: int = PORT) -> tuple[str, list[str]]:
    """Where the browser finds the dashboard of a gattemu whose API is on 127.0.0.1:`port` here, and the
    arguments that make gattemu answer to that name: the forwarded port when the browser is outside the VM."""
    forwarded = os.environ.get(f"GATTEMU_FORWARD_{port}")
    if REMOTE:
        assert forwarded, f"GATTEMU_WEBDRIVER without GATTEMU_FORWARD_{port}: run the sandbox with --forward {port}"
        return f"http://{forwarded}", ["--control", f"127.0.0.1:{port}", "--control-allow-host", forwarded]
    return f"http://127.0.0.1:{port}", ["--control", f"127.0.0.1:{port}"]


def open_browser():
    from selenium import webdriver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                     "--disable-extensions", "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                     "--disable-backgrounding-occluded-windows", "--window-size=1400,1800"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if REMOTE:  # the host's chromedriver; it gives Chromium a profile directory of its own
        from selenium.webdriver.chromium.remote_connection import ChromiumRemoteConnection
        # Chromium's commands (the browser's console log, console_errors) as webdriver.Chrome has them.
        executor = ChromiumRemoteConnection(REMOTE, vendor_prefix="goog", browser_name="chrome")
        driver = webdriver.Remote(command_executor=executor, options=options)
    else:
        from selenium.webdriver.chrome.service import Service
        options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='gattemu-chromium-')}")
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    # Selenium's own wait for chromedriver's answer (120 s) must outlast the page-load timeout below, or a slow
    # first page on a loaded host ends as a read timeout that looks like a hang.
    driver.command_executor.client_config.timeout = 300
    driver.set_page_load_timeout(180)  # the VM emulates its CPU (TCG): Chromium's first page takes a while
    driver.set_script_timeout(60)
    return driver


def screenshot(driver, name: str) -> None:
    driver.save_screenshot(str(Path(os.environ["GATTEMU_OUT"]) / f"dashboard-{name}.png"))


def click(driver, selector: str, attempts: int = 5) -> None:
    """Clicks the element `selector` names, finding it again when the page redrew it in between (the dashboard
    redraws tables after events)."""
    from selenium.common.exceptions import StaleElementReferenceException
    for attempt in range(attempts):
        try:
            driver.find_element("css selector", selector).click()
            return
        except StaleElementReferenceException:
            if attempt == attempts - 1:
                raise
            time.sleep(0.2)


def retry_stale(action, attempts: int = 5):
    """Runs `action` again when the page redrew an element it was using (the dashboard redraws after events; an
    element it took out of the page can also be reported as not interactable)."""
    from selenium.common.exceptions import ElementNotInteractableException, StaleElementReferenceException
    for attempt in range(attempts):
        try:
            return action()
        except (StaleElementReferenceException, ElementNotInteractableException):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2)


def type_into(field, text: str) -> None:
    """Replaces what `field` holds with `text` as a user would: click, select all, type. Unlike WebDriver's clear(),
    which blurs the field, the field keeps the focus throughout, and the dashboard does not redraw a table that
    holds the focus (a redraw between clear() and typing once took the field away: CI, 2026-11-23)."""
    from selenium.webdriver.common.keys import Keys
    field.click()
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text)


def console_errors(driver) -> list[str]:
    from selenium.webdriver.remote.command import Command
    return [e["message"] for e in driver.execute(Command.GET_LOG, {"type": "browser"})["value"] if e["level"] == "SEVERE"]


def page_wait(driver, script: str, *args, timeout: float = 30.0, what: str = "condition"):
    """Polls a script on the page until it returns something truthy (blocking: call through to_thread)."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script, *args)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"the dashboard did not show {what} within {timeout} s")
        time.sleep(0.05)


def page_clock_offset(driver) -> float:
    """Seconds the page's clock (Date.now(): the browser's machine, the host when GATTEMU_WEBDRIVER) is ahead of
    this process's time.time(), from the quickest of a few round trips (error at most half of it)."""
    best = None
    for _ in range(5):
        before = time.time()
        page = driver.execute_script("return Date.now()") / 1000
        after = time.time()
        if best is None or after - before < best[0]:
            best = (after - before, page - (before + after) / 2)
    return best[1]


# Notes, in the page, when each event reaches the timeline (Date.now(), on the page's clock: see
# page_clock_offset): Timeline.add is wrapped on the instance the dashboard uses. One WebDriver call reads them all at the end,
# so the test's polling does not slow the page down or add its own latency (Chromium runs under TCG here).
RECORD_ARRIVALS = """
const timeline = window.gattemuTimeline;
window.gattemuArrivals = {};
const add = timeline.add.bind(timeline);
timeline.add = (list) => {
  const now = Date.now();
  for (const event of list) if (!(event.seq in window.gattemuArrivals)) window.gattemuArrivals[event.seq] = now;
  return add(list);
};
"""
ARRIVALS = """
return window.gattemuTimeline.events.filter(e => e.seq in window.gattemuArrivals)
  .map(e => [e.event, e.value || '', window.gattemuArrivals[e.seq] / 1000]);
"""


async def test_dashboard_follows_the_leaf_flow(central, start_gattemu):
    base, control = dashboard()
    p = start_gattemu(PROFILE, "variables.touchDuration=10000", args=control)
    adv = await p.advertising(central, name=leaf_name(), service_uuid=LEAF_SERVICE)
    assert LEAF_TOUCH_SERVICE not in adv.service_uuids
    # As `gattemu run` prints it: the page takes the token from the fragment.
    url = f"{base}/#token={token(PORT)}"
    driver = await asyncio.to_thread(open_browser)
    try:
        await asyncio.to_thread(driver.get, url)
        await asyncio.to_thread(page_wait, driver, "return document.querySelector('#gatt tr[data-characteristic=data]')",
                                what="the GATT table")
        await asyncio.to_thread(page_wait, driver, "return document.getElementById('stream-badge').textContent.includes('live')",
                                what="the live event stream")
        await asyncio.to_thread(screenshot, driver, "start")

        # 1. "touch" on the page: the touch UUID shows in the advertisement card, and the central sees it on air.
        await asyncio.to_thread(click, driver, "#triggers button[data-trigger=touch]")
        await asyncio.to_thread(page_wait, driver, "return document.getElementById('advertisements').textContent.includes(arguments[0])",
                                LEAF_TOUCH_SERVICE, what="the touch service UUID in the advertisement card")
        touched = await p.advertising(central, timeout=12, service_uuid=LEAF_TOUCH_SERVICE)
        assert touched.address == adv.address
        await asyncio.to_thread(screenshot, driver, "touched")
        await central.wait_gone(service_uuid=LEAF_TOUCH_SERVICE, timeout=30)  # touchDuration 10 s

        # 2. The LEAF flow; every write and notification shows in the timeline within 1 s.
        await asyncio.to_thread(driver.execute_script, RECORD_ARRIVALS)
        offset = await asyncio.to_thread(page_clock_offset, driver)
        operations: list[tuple[str, str, float]] = []  # (event kind, hex, when the central did/saw it: time.time())
        conn = await central.connect(name=leaf_name())
        try:
            data = Inbox("notification data", say)
            await conn.subscribe(LEAF_DATA, data)

            async def write(frame: bytes):
                operations.append(("write", frame.hex(), time.time()))
                await conn.write(LEAF_DATA, frame, response=False)

            async def notification() -> bytes:
                value = await data.get()
                operations.append(("notify", value.hex(), time.time()))
                return value

            await write(leaf_frame(1, 0, secrets.token_bytes(8)) + leaf_frame(2, 1, secrets.token_bytes(16)))
            auth = [await notification(), await notification()]
            assert [leaf_parse(f)["tag"] for f in auth] == [3, 2]
            await write(leaf_frame(3, 2, secrets.token_bytes(16)))
            result = await notification()
            assert leaf_parse(result)["value"] == b"\x00", result.hex()
            await write(leaf_frame(4, 3, os.urandom(32)))
            certificate = await notification()
            assert len(certificate) == 103, certificate.hex()
            # Every operation must reach the timeline; how fast is a figure, not a pass mark (a loaded TCG VM
            # took 1.36 s once): reported, and bounded only at 3 s, past which the page is broken, not slow.
            seen: dict[tuple[str, str], float] = {}
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                for kind, value, at in await asyncio.to_thread(driver.execute_script, ARRIVALS):
                    seen.setdefault((kind, value), at - offset)
                if all((kind, value) in seen for kind, value, _ in operations):
                    break
                await asyncio.sleep(0.3)
            late = []
            for kind, value, at in operations:
                shown = seen.get((kind, value))
                if shown is None or shown - at > 3.0:
                    late.append(f"{kind} {value[:16]}…: {'never' if shown is None else f'{shown - at:.2f} s'}")
            assert not late, "not in the timeline within 3 s: " + "; ".join(late)
            delays = [seen[(k, v)] - at for k, v, at in operations]
            report(f"dashboard timeline (LEAF flow): {len(operations)} writes and notifications, each shown "
                   f"{min(delays) * 1000:.0f}–{max(delays) * 1000:.0f} ms after the central wrote or received it"
                   f" (the page's clock {offset * 1000:+.0f} ms from the VM's, taken out)"
                   f" ({sum(1 for d in delays if d > 1.0)} over 1 s)")

            # The central and its MTU are listed (the row is redrawn as status refreshes: wait for the MTU in it).
            row = await asyncio.to_thread(page_wait, driver,
                                          "const r = Array.from(document.querySelectorAll('#centrals tr'))"
                                          ".find(r => /([0-9A-F]{2}:){5}[0-9A-F]{2}/.test(r.textContent));"
                                          " return r && r.textContent.includes(arguments[0]) && r.textContent",
                                          str(conn.mtu), timeout=10, what=f"the connected central with MTU {conn.mtu}")
            assert "data" in row, f"the subscription is not listed in {row!r}"
            await asyncio.to_thread(screenshot, driver, "flow")

            # 3. A value set and notified from the page reaches the central.
            value = bytes([0x81, 0x00, 0x7E, 0x01, 0x01, 0x42])

            def notify_from_page():
                field = driver.find_element("css selector", "#gatt input[data-value-for=data]")
                type_into(field, value.hex(" "))
                row = field.find_element("xpath", "ancestor::tr")
                [b for b in row.find_elements("css selector", "button") if b.text == "Notify"][0].click()
            await asyncio.to_thread(retry_stale, notify_from_page)
            got = await data.get()
            assert got == value, got.hex()

            # 4. A fault installed from the page's form: the next notification is corrupted as it says.
            def install_fault():
                from selenium.webdriver.support.ui import Select
                form = driver.find_element("id", "fault-form")
                Select(form.find_element("name", "action")).select_by_value("corrupt")
                Select(form.find_element("name", "on")).select_by_value("notify")
                Select(form.find_element("name", "characteristic")).select_by_value("data")
                Select(form.find_element("name", "value:form")).select_by_value("hex")  # {"hex": …}, not the example's flipBits
                for name, text in (("value.hex", "ff"), ("count", "1"), ("id", "page-fault")):
                    field = form.find_element("name", name)
                    type_into(field, text)
                form.find_element("css selector", "button[type=submit]").click()
            await asyncio.to_thread(retry_stale, install_fault)
            await asyncio.to_thread(page_wait, driver, "return document.querySelector('#faults tr[data-fault=page-fault]')",
                                    what="the installed fault")
            await conn.write(LEAF_DATA, b"\x00\x01", response=False)  # garbage: answered with response code 3
            corrupted = await data.get()
            assert corrupted[0] == 0xFF and corrupted[1:2] == b"\x00", corrupted.hex()
            await asyncio.to_thread(page_wait, driver,
                                    "return window.gattemuTimeline.events.some(e => e.event === 'fault' && (e.detail || '').startsWith('page-fault'))",
                                    what="the fault's event")
            await asyncio.to_thread(screenshot, driver, "fault")
        finally:
            await conn.disconnect()
        errors = await asyncio.to_thread(console_errors, driver)
        assert errors == [], errors

        # 5. `gattemu report` on this run's event log: valid HTML that Chromium opens without console errors,
        # with every write and notification of the flow in its timeline.
        assert p.events is not None and p.events.exists()
        html = Path(os.environ["GATTEMU_OUT"]) / "dashboard-report.html"
        made = await asyncio.to_thread(subprocess.run, [p.argv[0], "report", str(p.events), "-o", str(html)],
                                       capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        # The browser outside the VM runs as nobody on the host (scripts/sandbox), which need not be able to reach
        # the out dir (nor read the file: gattemu writes it for its owner only): it gets the file's bytes, as the
        # report's reader on another machine would.
        if REMOTE:
            location = "data:text/html;base64," + base64.b64encode(html.read_bytes()).decode()
        else:
            location = html.as_uri()
        await asyncio.to_thread(driver.get, location)
        shown = await asyncio.to_thread(page_wait, driver,
                                        "return window.gattemuTimeline && window.gattemuTimeline.events.length &&"
                                        " window.gattemuTimeline.events.map(e => [e.event, e.value || ''])",
                                        what="the report's timeline")
        missing = [f"{kind} {value[:16]}…" for kind, value, _ in operations if [kind, value] not in shown]
        assert not missing, "not in the report: " + "; ".join(missing)
        summary = await asyncio.to_thread(lambda: driver.find_element("id", "summary").text)
        assert "1 fault fired" in summary, summary
        await asyncio.to_thread(screenshot, driver, "report")
        errors = await asyncio.to_thread(console_errors, driver)
        assert errors == [], errors
    finally:
        await asyncio.to_thread(driver.quit)



async def test_dashboard_shows_the_passkey_and_forgets_the_bond(central, start_gattemu, tmp_path, needs_separate_stack):
    """A device that displays its passkey: the central's user reads it off the dashboard (as from the device's
    screen) and types it; the bond appears in the pairing card, and its Forget button makes bluetoothd forget it."""
    from test_pairing import read_info, secure_profile
    profile = secure_profile(tmp_path, {"io": "DisplayOnly"}, "ShowsPasskey")
    base, control = dashboard()
    p = start_gattemu(profile, args=control)
    await p.wait_ready(60)
    driver = await asyncio.to_thread(open_browser)
    try:
        await asyncio.to_thread(driver.get, f"{base}/#token={token(PORT)}")
        await asyncio.to_thread(page_wait, driver, "return !document.getElementById('card-pairing').hidden",
                                what="the pairing card", timeout=60)
        mode = await asyncio.to_thread(driver.execute_script, "return document.getElementById('pairing-mode').textContent")
        assert mode.startswith("DisplayOnly"), mode
        conn = await central.connect(name="ShowsPasskey")

        async def type_passkey() -> int:
            text = await asyncio.to_thread(
                page_wait, driver, "const e = document.getElementById('pairing-displayed'); return !e.hidden && e.textContent",
                what="the passkey", timeout=30)
            return int(text.split("Passkey shown: ")[1][:6])

        try:
            await conn.pair("KeyboardOnly", type_passkey=type_passkey)
            assert await read_info(conn) == "read iPhone ABC"
            await asyncio.to_thread(page_wait, driver, "return document.querySelector('#bonds button')",
                                    what="the bond with its Forget button", timeout=30)
            await asyncio.to_thread(screenshot, driver, "pairing")
            await asyncio.to_thread(retry_stale, lambda: click(driver, "#bonds button"))
            await asyncio.to_thread(page_wait, driver,
                                    "return document.getElementById('bonds').textContent.includes('no paired centrals')",
                                    what="the bond gone", timeout=30)
            assert not console_errors(driver), console_errors(driver)
            report("dashboard pairing: the central typed the passkey shown on the dashboard, the bond appeared in the "
                   "pairing card and its Forget button made bluetoothd forget it")
        finally:
            await conn.forget_keys()
            await conn.disconnect()
    finally:
        await asyncio.to_thread(driver.quit)
