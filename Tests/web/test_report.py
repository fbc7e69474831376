"""`gattemu report` and `gattemu ctl` against hostile text: event fields carry what a phone, a profile, a capture
or a cloned device said, so markup and terminal controls in them, wrapped in combining and prepended scalars
(`"\u0600<"` is one grapheme, not `<`), must come out as text. Also where and how the report is written, and
how much it reads."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import time
import urllib.request
from collections import Counter

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import OUT, ROOT, console_errors, screenshot, wait_for

# Markup around which every escaper must hold: U+0600 (prepended) before, U+0301 (combining) after. The first
# ends the data block and injects a refresh and a heading when `<` and `>` are escaped by Character.
HOSTILE = [
    "\u0600</script >\u0301\u0600<meta http-equiv=refresh content=0;url=about:blank>\u0301"
    "\u0600<h1 id=injected>\u0301ALL TESTS PASSED\u0600</h1>\u0301",
    "\u0600</script><meta http-equiv=\"refresh\" content=\"0;url=data:text/html,pwned\">\u0301",
    "\u0600<h1 id=\"injected\">ALL TESTS PASSED</h1>\u0301",
    "<!--\u0600<script>\u0301alert(1)</script>",
    "a\u2028b\u2029c & &amp; \"'\u0600>\u0301",
]
# Terminal controls: ESC sequences (CSI, OSC retitling with BEL), C1 CSI, bidi override and isolate.
TERMINAL = "\u0600\x1b[2J\x1b]0;pwned\x07\u0301 \x9b31m \u202eevil\u2066 \r\n"
CONTROLS = ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\r"]


def gattemu(binaries, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(binaries["gattemu"]), *args], capture_output=True, text=True, timeout=120, **kwargs)


def events_file(path, texts: list[str]) -> None:
    """Each text as a note's detail, a write's characteristic and a central (one lane each)."""
    lines = []
    for index, text in enumerate(texts):
        seq = 3 * index + 1
        lines.append({"seq": seq, "t": seq * 1.5, "event": "note", "detail": text})
        lines.append({"seq": seq + 1, "t": seq * 1.5 + 0.5, "event": "write", "central": text, "characteristic": text, "value": "5160"})
        lines.append({"seq": seq + 2, "t": seq * 1.5 + 1, "event": "fault", "central": text, "characteristic": "rx", "detail": text})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def tag_counts(browser) -> Counter:
    return Counter(browser.execute_script("return Array.from(document.querySelectorAll('*'), (node) => node.tagName)"))


def test_hostile_events_add_no_element_to_the_report(binaries, browser, tmp_path):
    # The events file's path is the report's title: it is hostile too (each '/' is a directory).
    hostile_dir = tmp_path / "\u0600<" / "title><h1 id=\"injected-title\">ALL TESTS PASSED<" / "h1>\u0301"
    hostile_dir.mkdir(parents=True)
    hostile_events = hostile_dir / "run.jsonl"
    events_file(hostile_events, HOSTILE)
    # The same events with plain text: the report must have exactly the same elements.
    plain_events = tmp_path / "plain.jsonl"
    events_file(plain_events, [f"plain text {index}" for index in range(len(HOSTILE))])
    OUT.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, events in (("plain", plain_events), ("hostile", hostile_events)):
        report = OUT / f"report-{name}.html"
        result = gattemu(binaries, "report", str(events), "-o", str(report))
        assert result.returncode == 0, result.stderr
        browser.get(report.as_uri())
        wait_for(lambda: browser.execute_script("return window.gattemuTimeline && window.gattemuTimeline.events.length") == 3 * len(HOSTILE),
                 what=f"the {name} report's timeline")
        time.sleep(1.5)  # a meta refresh of 0 s would have navigated by now
        assert browser.current_url == report.as_uri(), f"the {name} report navigated to {browser.current_url}"
        counts[name] = tag_counts(browser)
        if name == "hostile":
            screenshot(browser, "report-hostile")
            assert browser.title == "gattemu report — " + str(events)
            assert browser.find_element(By.CSS_SELECTOR, "header h1 small").text == str(events)
            assert not browser.find_elements(By.CSS_SELECTOR, "#injected, #injected-title")
            assert len(browser.find_elements(By.TAG_NAME, "meta")) == 3, "charset, viewport and the CSP only"
            assert [h1.text for h1 in browser.find_elements(By.TAG_NAME, "h1")] == ["gattemu report " + str(events)]
            # The events arrive whole, as text.
            parsed = browser.execute_script("return window.gattemuTimeline.events.filter((e) => e.event === 'note').map((e) => e.detail)")
            assert parsed == HOSTILE
            assert browser.execute_script("return window.gattemuTimeline.lanes") == HOSTILE
            notes = browser.execute_script("return Array.from(document.querySelectorAll('#timeline span.tl-note'), (n) => n.textContent)")
            assert notes == ["note " + text for text in HOSTILE]
            assert console_errors(browser) == []
    assert counts["hostile"] == counts["plain"], f"elements differ: {counts['hostile'] - counts['plain']} more, {counts['plain'] - counts['hostile']} fewer"


def test_a_hundred_thousand_centrals_open_in_seconds(binaries, browser, tmp_path):
    events = tmp_path / "centrals.jsonl"
    with events.open("w") as file:
        for seq in range(1, 100_001):
            file.write(json.dumps({"seq": seq, "t": seq * 1.0, "event": "write", "central": "C%05X" % seq, "characteristic": "rx", "value": "51"}) + "\n")
    report = OUT / "report-100k-centrals.html"
    result = gattemu(binaries, "report", str(events), "-o", str(report))
    assert result.returncode == 0, result.stderr
    browser.set_page_load_timeout(120)
    start = time.monotonic()
    browser.get(report.as_uri())
    wait_for(lambda: browser.execute_script("return window.gattemuTimeline && window.gattemuTimeline.lanes.length") == 100_000,
             timeout=120, what="100,000 lanes")
    opened = time.monotonic() - start
    elements = browser.execute_script("return document.querySelectorAll('*').length")
    print(f"report of 100,000 events from 100,000 centrals: open in {opened:.1f} s, {elements} elements")
    # Before the lanes were indexed and only those in view drawn it took 84 s here (400,000 elements).
    assert opened < 20, f"{opened:.1f} s to open"
    assert elements < 2000, f"{elements} elements: lanes out of view are drawn"
    assert "and 99900 more" in browser.find_element(By.ID, "summary").text
    assert browser.execute_script("const t = document.getElementById('timeline'); return t.scrollWidth <= t.clientWidth"), \
        "lane names past the width widen the timeline"
    screenshot(browser, "report-100k-centrals")
    assert console_errors(browser) == []


def test_output_is_never_written_through_a_symbolic_link(binaries, tmp_path):
    events = tmp_path / "events.jsonl"
    events_file(events, ["x"])
    target = tmp_path / "victim"
    target.write_text("keep me\n")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    result = gattemu(binaries, "report", str(events), "-o", str(link))
    assert result.returncode == 1, result.stderr
    assert "symbolic link" in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert target.read_text() == "keep me\n" and link.is_symlink()


def test_the_report_is_written_with_mode_0600(binaries, tmp_path):
    events = tmp_path / "events.jsonl"
    events_file(events, ["x"])
    fresh = tmp_path / "fresh.html"
    old = os.umask(0o022)
    try:
        assert gattemu(binaries, "report", str(events), "-o", str(fresh)).returncode == 0
        existing = tmp_path / "existing.html"
        existing.write_text("an older, longer report " * 1000)
        existing.chmod(0o644)
        assert gattemu(binaries, "report", str(events), "-o", str(existing)).returncode == 0
    finally:
        os.umask(old)
    for path in (fresh, existing):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, f"{path.name}: {oct(path.stat().st_mode)}"
        assert path.read_text().startswith("<!DOCTYPE html>") and path.read_text().rstrip().endswith("</html>")
    # /dev/null is not a regular file: written to, left as it is.
    assert gattemu(binaries, "report", str(events), "-o", "/dev/null").returncode == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and stat.S_IMODE(os.stat("/dev/null").st_mode) == 0o666


def test_an_events_file_over_256_mib_is_refused(binaries, tmp_path):
    events = tmp_path / "huge.jsonl"
    with events.open("wb") as file:
        file.truncate((256 << 20) + 1)  # sparse: nothing is written
    report = tmp_path / "report.html"
    result = gattemu(binaries, "report", str(events), "-o", str(report))
    assert result.returncode == 2, result.stderr
    assert "larger than 256 MiB" in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not report.exists()
    # Through a pipe the size is not known beforehand: counted while reading.
    chunk = (b" " * 1023 + b"\n") * 1024  # blank lines: skipped, so only the count can stop it

    process = subprocess.Popen([str(binaries["gattemu"]), "report", "/dev/stdin", "-o", str(report)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range((256 << 20) // len(chunk) + 2):
            process.stdin.write(chunk)
    except BrokenPipeError:
        pass
    process.stdin.close()
    stderr = process.stderr.read().decode()
    assert process.wait(60) == 2, stderr
    assert "larger than 256 MiB" in stderr


def test_a_file_of_long_values_makes_a_bounded_page_in_bounded_memory(binaries, tmp_path):
    """70 MB of events whose values are 500 KB each (a burst of long notifications, a hostile events file): the
    report keeps the latest 64 MiB of events with their long values cut (and says both), so the page and the memory
    making it stay bounded (before: 3.4 GB resident and a 1.5 GB page for a 250 MB file, about 1 GB for this one)."""
    import sys
    events = tmp_path / "long.jsonl"
    value = "ab" * 250_000
    with events.open("w") as file:
        for seq in range(1, 141):
            file.write(json.dumps({"seq": seq, "t": seq, "event": "notify", "central": "AA:BB:CC:DD:EE:01",
                                   "characteristic": "tx", "value": value}) + "\n")
    assert events.stat().st_size > 64 << 20  # more than the 64 MiB the report keeps
    report = tmp_path / "report.html"
    # Through a Python of its own whose only child is gattemu: its children's peak resident memory is gattemu's.
    measure = ("import resource, subprocess, sys\n"
               "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
               "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    result = subprocess.run([sys.executable, "-c", measure, str(binaries["gattemu"]), "report", str(events), "-o", str(report)],
                            capture_output=True, text=True, timeout=600)
    code, peak_kib = (int(x) for x in result.stdout.split())
    assert code == 0, result.stderr
    page = report.read_text()
    assert report.stat().st_size < 80 << 20, f"{report.stat().st_size} bytes"
    assert "140 events have a value or detail longer than 4096 characters, cut here" in page
    assert "latest 140 are shown" not in page  # all 140 fit once cut
    assert peak_kib < 256 << 10, f"gattemu report peaked at {peak_kib // 1024} MiB"
    print(f"gattemu report of {events.stat().st_size} bytes: peak {peak_kib // 1024} MiB")


def test_errors_quote_hostile_input_escaped(binaries, tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"seq": 1, "t": 0, "event": "\u0600" + TERMINAL}) + "\n", encoding="utf-8")
    result = gattemu(binaries, "report", str(events), "-o", str(tmp_path / "report.html"))
    assert result.returncode == 2, result.stderr
    assert "events.jsonl:1: not an event" in result.stderr
    assert not any(control in result.stderr for control in CONTROLS), repr(result.stderr)
    assert "\\u{1B}]0;pwned\\u{7}" in result.stderr and "\\u{202E}evil\\u{2066}" in result.stderr, result.stderr
    # A hostile path in the success line and in an error.
    hostile = tmp_path / ("out\x1b]0;pwned\x07\u202e.html")
    events_file(events, ["x"])
    result = gattemu(binaries, "report", str(events), "-o", str(hostile))
    assert result.returncode == 0 and "written to" in result.stderr
    assert not any(control in result.stderr for control in CONTROLS), repr(result.stderr)
    result = gattemu(binaries, "report", str(tmp_path / "missing\x1b[2J.jsonl"))
    assert result.returncode == 2 and "missing\\u{1B}[2J.jsonl" in result.stderr, repr(result.stderr)


def test_ctl_prints_no_terminal_controls(binaries, server_factory, tmp_path):
    # The profile's path is in the status; the note's detail in the events.
    profile = tmp_path / ("noke\x1b]0;pwned\x07\u202e.json")
    profile.write_bytes((ROOT / "profiles" / "noke-lock.json").read_bytes())
    server = server_factory("--profile", str(profile), "--events", "8", "--note", TERMINAL, "--note", HOSTILE[0])
    for command in (["events"], ["status"], ["events", "--json"], ["status", "--json"]):
        result = gattemu(binaries, "ctl", *command, "--control", server.url)
        assert result.returncode == 0, result.stderr
        assert not any(control in result.stdout for control in CONTROLS), f"{command}: {result.stdout!r}"
        if command == ["events"]:
            assert "\\u{1B}[2J\\u{1B}]0;pwned\\u{7}" in result.stdout and "\\u{9B}31m \\u{202E}evil\\u{2066} \\r\\n" in result.stdout, result.stdout
        if command == ["status"]:
            assert "noke\\u{1B}]0;pwned\\u{7}\\u{202E}.json" in result.stdout, result.stdout
        if command == ["events", "--json"]:
            details = [json.loads(line).get("detail") for line in result.stdout.splitlines()]
            assert details[-2:] == [TERMINAL, HOSTILE[0]], "the JSON is the same JSON"
        if command == ["status", "--json"]:
            assert json.loads(result.stdout)["profile"] == str(profile)


def test_ctl_firmware_shows_the_target_and_says_when_there_is_none(binaries, server_factory):
    """`gattemu ctl firmware`: GET /v1/firmware as text (each slot with its flags and hash, the upload, the SMP
    buffers) or its JSON; a profile without a `firmware` section gets exit 1 and the server's one-line reason."""
    server = server_factory("--profile", str(ROOT / "profiles" / "mcuboot-sensor.json"))
    text = gattemu(binaries, "ctl", "firmware", "--control", server.url)
    assert text.returncode == 0, text.stderr
    raw = gattemu(binaries, "ctl", "firmware", "--json", "--control", server.url)
    assert raw.returncode == 0, raw.stderr
    firmware = json.loads(raw.stdout)
    slot = firmware["slots"][0]
    assert slot["active"] and slot["confirmed"] and not slot["pending"], firmware
    lines = text.stdout.splitlines()
    assert lines[0] == f"slot 0  {slot['version']}  active, confirmed, bootable", text.stdout
    assert lines[1].split() == ["sha256", slot["hash"]], text.stdout
    assert "upload  none" in lines, text.stdout
    assert f"SMP     buffer {firmware['bufferSize']} bytes × {firmware['bufferCount']}; slot size {firmware['slotSize']} bytes" \
        in lines, text.stdout
    plain = server_factory("--profile", str(ROOT / "profiles" / "noke-lock.json"))
    none = gattemu(binaries, "ctl", "firmware", "--control", plain.url)
    assert none.returncode == 1 and none.stdout == "", (none.returncode, none.stdout)
    assert none.stderr.count("\n") == 1 and "no \"firmware\" section" in none.stderr, none.stderr


def test_an_event_with_a_long_value_and_a_long_detail_has_both_cut(binaries, tmp_path):
    """Each long field of an event is cut, not only the first found: a hostile line with a 100 KB value and a 100 KB
    detail makes neither whole in the page, and the event is counted once."""
    events = tmp_path / "both.jsonl"
    events.write_text(json.dumps({"seq": 1, "t": 0, "event": "write", "central": "AA:BB:CC:DD:EE:01",
                                  "characteristic": "tx", "value": "ab" * 50_000, "detail": "z" * 100_000}) + "\n")
    report = tmp_path / "report.html"
    result = gattemu(binaries, "report", str(events), "-o", str(report))
    assert result.returncode == 0, result.stderr
    page = report.read_text()
    assert "1 events have a value or detail longer than 4096 characters, cut here" in page
    assert "ab" * 2049 not in page, "the value is whole"
    assert "z" * 1025 not in page, "the detail is whole"


def test_a_rigs_report_names_each_events_device(binaries, browser, tmp_path):
    """Events of a rig (`gattemu run A@hci0 B@hci1`) carry their device: the report shows it on each row (and its text
    filter finds a device's rows), hostile device names included."""
    events = tmp_path / "rig.jsonl"
    lines = [
        {"seq": 1, "t": 1.0, "event": "write", "central": "AA:BB:CC:DD:EE:01", "characteristic": "rx", "value": "5160", "device": "lock"},
        {"seq": 2, "t": 2.0, "event": "write", "central": "AA:BB:CC:DD:EE:02", "characteristic": "data", "value": "01", "device": "reader"},
        {"seq": 3, "t": 3.0, "event": "note", "detail": "x", "device": HOSTILE[0]},
    ]
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    page = tmp_path / "rig.html"
    result = gattemu(binaries, "report", str(events), "-o", str(page))
    assert result.returncode == 0, result.stderr
    browser.get(page.as_uri())
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row")) == 3, what="the three rows")
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row")]
    assert "[lock] write rx" in rows[0] and "[reader] write data" in rows[1], rows
    assert not browser.find_elements(By.ID, "injected"), "a device name became markup"
    # One lane per device on gattemu's side, named in the header, each event drawn from its own device's lane.
    assert browser.execute_script("return window.gattemuTimeline.devices") == ["lock", "reader", HOSTILE[0]]
    names = [n.text for n in browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-header .tl-gattemu")]
    assert names[:2] == ["lock", "reader"], names
    arrows = browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row .tl-arrow")
    lock_x, reader_x = (browser.execute_script("return window.gattemuTimeline.deviceX(arguments[0], "
                                               "window.gattemuTimeline.viewport.clientWidth)", i) for i in (0, 1))
    assert reader_x > lock_x
    assert [round(float(a.value_of_css_property("left").removesuffix("px"))) for a in arrows] == [round(lock_x), round(reader_x)]
    summary = browser.find_element(By.ID, "summary").text
    assert "Devices" in summary and "lock: 1 events" in summary and "reader: 1 events" in summary, summary
    filter_box = browser.find_element(By.ID, "filter-text")
    filter_box.send_keys("[reader]")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row")) == 1, what="the reader's row only")
    assert console_errors(browser) == []


def test_ctl_lists_a_rigs_devices_and_drives_one(binaries, server_factory):
    """`gattemu ctl devices` and `gattemu ctl COMMAND --device ID …` against a rig (the fixture's --also): each command goes to
    that device's routes; the own path of a device route answers 409 naming the devices."""
    server = server_factory("--profile", "profiles/noke-lock.json", "--also", "profiles/leaf-reader.json")
    control = ["--control", server.url]
    listed = gattemu(binaries, "ctl", "devices", *control)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["noke-lock", "leaf-reader"], listed.stdout
    assert all(" running " in line for line in listed.stdout.splitlines()), listed.stdout
    reader = gattemu(binaries, "ctl", "status", "--device", "leaf-reader", *control)
    assert reader.returncode == 0 and "leaf-reader.json" in reader.stdout, reader.stdout + reader.stderr
    fired = gattemu(binaries, "ctl", "trigger", "touch", "--device", "leaf-reader", *control)
    assert fired.returncode == 0, fired.stderr
    events = gattemu(binaries, "ctl", "events", "--json", "--device", "leaf-reader", *control)
    lines = [json.loads(line) for line in events.stdout.splitlines()]
    assert lines and all(e.get("device") == "leaf-reader" for e in lines), events.stdout
    assert any(e.get("detail") == "trigger touch" for e in lines), events.stdout
    unknown = gattemu(binaries, "ctl", "status", "--device", "door", *control)
    assert unknown.returncode == 1 and "404" in unknown.stderr and "door" in unknown.stderr, unknown.stderr
    plain = gattemu(binaries, "ctl", "status", *control)
    assert plain.returncode == 1 and "409" in plain.stderr and "devices" in plain.stderr, plain.stderr


def test_a_firmware_upload_is_in_the_reports_summary(binaries, server_factory, browser, tmp_path):
    """The events of a firmware-update target to which a central sent half of an MCUboot image (the fixture's --upload:
    real SMP upload requests through the emulator, each chunk's event with its progress), as `gattemu report` shows
    them: the upload, how far it got and that it stopped there; a complete upload and the milestones after it (an
    events file can hold what a run logged: a boot)."""
    image = ROOT / "Tests" / "McuMgrTests" / "Fixtures" / "app-1.2.3+4.bin"
    size = image.stat().st_size
    server = server_factory("--profile", str(ROOT / "profiles" / "mcuboot-sensor.json"), "--upload", str(image))
    with urllib.request.urlopen(server.url + "/v1/events?since=0&limit=1000") as answer:
        logged = json.load(answer)["events"]
    chunks = [event for event in logged if event["event"] == "firmware" and "progress" in event]
    assert chunks and chunks[-1]["progress"] == {"done": size // 2, "total": size}, chunks[-1:]
    last = logged[-1]["seq"]
    later = [
        {"seq": last + 1, "t": 90.0, "event": "firmware", "central": "AA:BB:CC:DD:EE:02", "characteristic": "smp",
         "detail": "smp: image upload seq 1: upload 0+4096 of 4096: complete", "progress": {"done": 4096, "total": 4096}},
        {"seq": last + 2, "t": 95.0, "event": "firmware", "detail": "firmware: booted 1.2.3.4, swapped in for test (not confirmed)"},
    ]
    events = tmp_path / "firmware.jsonl"
    events.write_text("".join(json.dumps(event) + "\n" for event in logged + later), encoding="utf-8")
    page = tmp_path / "firmware.html"
    result = gattemu(binaries, "report", str(events), "-o", str(page))
    assert result.returncode == 0, result.stderr
    browser.get(page.as_uri())
    wait_for(lambda: "Firmware update" in browser.find_element(By.ID, "summary").text, what="the firmware summary")
    uploads = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#summary .firmware .upload")]
    done = size // 2
    assert len(uploads) == 2, uploads
    assert uploads[0].startswith(f"upload {done} of {size} bytes ({done * 100 // size} %), stopped there in "), uploads
    assert uploads[1].startswith("upload 4096 of 4096 bytes (100 %), complete in "), uploads
    assert "booted 1.2.3.4, swapped in for test (not confirmed)" in browser.find_element(By.ID, "summary").text
    bars = browser.find_elements(By.CSS_SELECTOR, "#summary .firmware progress")
    assert [(int(b.get_attribute("value")), int(b.get_attribute("max"))) for b in bars] == [(done, size), (4096, 4096)]
    screenshot(browser, "report-firmware")
    assert console_errors(browser) == []


def test_a_channels_sdus_are_drawn_as_arrows_between_its_central_and_gattemu(binaries, browser, tmp_path):
    """`channel` events: listening stays on gattemu's lane, a channel opened and an SDU received come in from the
    central's lane, an SDU sent goes out to it; the kinds filter's "L2CAP channels" keeps only them."""
    events = tmp_path / "channels.jsonl"
    central = "AA:BB:CC:DD:EE:01"
    lines = [
        {"seq": 1, "t": 1.0, "event": "channel", "detail": "channel data listening on PSM 0x0080 (MTU 2048, security none)"},
        {"seq": 2, "t": 2.0, "event": "channel", "central": central, "detail": "open data #1 (the central takes SDUs of 2048 bytes)"},
        {"seq": 3, "t": 3.0, "event": "channel", "central": central, "value": "01", "detail": "sdu in data #1, 1 bytes"},
        {"seq": 4, "t": 4.0, "event": "channel", "central": central, "value": "8101", "detail": "sdu out data #1, 2 bytes"},
        {"seq": 5, "t": 5.0, "event": "write", "central": central, "characteristic": "rx", "value": "01"},
    ]
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    page = tmp_path / "channels.html"
    result = gattemu(binaries, "report", str(events), "-o", str(page))
    assert result.returncode == 0, result.stderr
    browser.get(page.as_uri())
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row")) == 5, what="the five rows")
    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row")
    ways = []
    for row in rows[:4]:
        arrows = row.find_elements(By.CSS_SELECTOR, ".tl-arrow")
        ways.append(arrows[0].get_attribute("class").split()[-1] if arrows else "note")
    assert ways == ["note", "tl-arrow-in", "tl-arrow-in", "tl-arrow-out"], ways
    Select(browser.find_element(By.ID, "filter-kinds")).select_by_value("channels")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#timeline .tl-row")) == 4, what="the channel rows only")
    assert console_errors(browser) == []
