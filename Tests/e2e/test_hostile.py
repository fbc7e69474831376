"""A hostile local user and a hostile web page against a running gattemu, while a real central uses the lock.

Each attack runs as the unprivileged user `nobody` (Tests/e2e/attacker.py drops to it) unless it says
otherwise; after each one the central writes a Noke command and must get its answer, `/v1/status` must
tell the truth (advertising, the one real central) and the event log must hold the central's operations
and nothing the attacker made up. The table `attack | refused | central unaffected | events intact` is
printed in the run's summary.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import LONG, report
from controlapi import client, token, token_path
from flows import NOKE_RX, NOKE_TX, Inbox

HERE = Path(__file__).resolve().parent
ATTACKER = [sys.executable, str(HERE / "attacker.py")]
PORT = 8766
API = f"http://127.0.0.1:{PORT}"
FAKE_CENTRAL = "66:66:66:66:66:66"


def noke_name() -> str:
    return "NOKE3E_" + os.environ["GATTEMU_PERIPH_ADDRESS"].replace(":", "").upper()


def http(method: str, path: str, body: bytes | None = None, headers: dict | None = None,
         timeout: float = 10) -> tuple[int, bytes]:
    """Root's request with the token of gattemu's run (headers may replace `Host` or add an `Origin`)."""
    answer = client(PORT).raw(method, path, body, headers=headers, timeout=timeout)
    return answer.status, answer.body


async def status() -> dict:
    code, body = await asyncio.to_thread(http, "GET", "/v1/status")
    assert code == 200, (code, body)
    return json.loads(body)


async def events_since(seq: int) -> list[dict]:
    code, body = await asyncio.to_thread(http, "GET", f"/v1/events?since={seq}&limit=10000")
    assert code == 200, (code, body)
    return json.loads(body)["events"]


class Attacker:
    """attacker.py serve: one process (as nobody, or root with stay_root) taking the attacks one at a time."""

    def __init__(self, stay_root: bool = False):
        self.proc = subprocess.Popen(ATTACKER + ["serve"] + (["--stay-root"] if stay_root else []), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def _ask(self, command: dict) -> dict:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"attacker.py exited ({self.proc.poll()}): {self.proc.stderr.read()[-2000:]}"
        answer = json.loads(line)
        assert "exception" not in answer, answer
        return answer

    async def ask(self, timeout: float = 300, **command) -> dict:
        return await asyncio.wait_for(asyncio.to_thread(self._ask, command), timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def notify_until_dropped(seen: int, limit: int) -> dict:
    """POSTs TX notifications over one connection until the event log says gattemu dropped one (looked at every 50),
    and 50 more; at most `limit`. Returns how many were sent and the slowest answer."""
    import http.client
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token(PORT)}"}
    body = json.dumps({"hex": "50" + "00" * 19})
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    sent, slowest, dropped_at = 0, 0.0, None
    try:
        while sent < limit and (dropped_at is None or sent < dropped_at + 50):
            t0 = time.monotonic()
            connection.request("POST", "/v1/characteristics/tx/notify", body, headers)
            answer = connection.getresponse()
            answer.read()
            slowest = max(slowest, time.monotonic() - t0)
            assert answer.status == 200, answer.status
            sent += 1
            if dropped_at is None and sent % 50 == 0:
                connection.request("GET", f"/v1/events?since={seen}&limit=10000", headers=headers)
                page = json.loads(connection.getresponse().read())
                seen = page["last"]
                if any("not reading its notification socket" in e.get("detail", "") for e in page["events"]):
                    dropped_at = sent
    finally:
        connection.close()
    return {"sent": sent, "slowest": slowest}


def gattemu_bus_name(pid: int) -> str:
    """gattemu's unique name on the system bus, found by its process id."""
    import dbus
    bus = dbus.SystemBus()
    driver = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
    for name in driver.ListNames():
        if name.startswith(":"):
            try:
                if int(driver.GetConnectionUnixProcessID(name)) == pid:
                    return str(name)
            except dbus.DBusException:
                pass
    raise AssertionError(f"no bus connection of pid {pid}")


def bluez_owner() -> str:
    import dbus
    bus = dbus.SystemBus()
    driver = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
    return str(driver.GetNameOwner("org.bluez"))


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Row:
    attack: str
    refused: bool
    unaffected: bool = False
    intact: bool = False
    note: str = ""


@pytest.fixture
def attackers():
    """(nobody, root): the attacker processes of one test."""
    nobody, root = Attacker(), Attacker(stay_root=True)
    yield nobody, root
    nobody.close()
    root.close()


async def test_hostile_local_user_and_web_page(central, start_gattemu, env, gattemu_bin, attackers):
    nobody, root = attackers
    out = Path(env["GATTEMU_OUT"])
    events_file = out / "hostile-events.jsonl"
    p = start_gattemu("noke-lock.json", args=["--events", str(events_file), "--control", f"127.0.0.1:{PORT}"])
    await p.advertising(central, name=noke_name())
    target = gattemu_bus_name(p.proc.pid)
    owner = bluez_owner()
    adapter = env["GATTEMU_PERIPH"]

    conn = await central.connect(name=noke_name())
    tx = Inbox("TX", lambda line: None)
    await conn.subscribe(NOKE_TX, tx)
    me = (await status())["centrals"]
    assert len(me) == 1, me
    real = me[0]["address"]
    rows: list[Row] = []
    checks = 0
    seen = (await status())["lastEvent"]

    async def central_and_log_ok(row: Row) -> None:
        """The central's command is answered; the status and the new events tell the truth."""
        nonlocal checks, seen
        checks += 1
        command = bytes([0, 0, checks]) + bytes(17)
        try:
            await conn.write(NOKE_RX, command, response=True)
            answer = await tx.get(timeout=20)
            s = await status()
            row.unaffected = (answer[:3] == bytes([0x51, 0x60, checks]) and s["advertising"]["advertised"]
                              and [c["address"] for c in s["centrals"]] == [real])
            if not row.unaffected:
                row.note += f" answer {answer.hex()} status {s['advertising']} {s['centrals']}"
        except Exception as e:  # noqa: BLE001 - recorded in the table
            row.note += f" central: {type(e).__name__}: {e}"
        new = await events_since(seen)
        seen = new[-1]["seq"] if new else seen
        kinds = [(e["event"], e.get("central"), e.get("value")) for e in new]
        bogus = [e for e in new if e["event"] in ("bluetoothd-lost", "bluetoothd-back")
                 or e.get("central") == FAKE_CENTRAL or "powered off" in e.get("detail", "")]
        row.intact = (("write", real, command.hex()) in kinds and any(k[0] == "notify" for k in kinds) and not bogus)
        if not row.intact:
            row.note += f" events {kinds[-8:]} bogus {bogus[:3]}"
        row.refused_events = [e for e in new if e["event"] == "refused"]  # type: ignore[attr-defined]

    # --- D-Bus signals posing as the bus and as bluetoothd, sent to gattemu alone and broadcast
    for name in ("bluetoothd-gone", "bluetoothd-replaced", "adapter-removed", "adapter-powered-off",
                 "fake-central-connected", "fake-central-added"):
        for dest in (target, "broadcast"):
            sent = await nobody.ask(what="spoof", name=name, dest=dest, owner=owner, adapter=adapter)
            assert sent["uid"] == 65534, sent
            row = Row(f"spoofed {name} ({'to gattemu' if dest != 'broadcast' else 'broadcast'})", refused=False)
            await central_and_log_ok(row)
            # Sent to gattemu: refused and logged. Broadcast: the bus routes it by our match rules (real
            # sender only), so gattemu never sees it; refused = it changed nothing.
            logged = any(name_part in e.get("detail", "") for e in row.refused_events
                         for name_part in ("NameOwnerChanged", "InterfacesRemoved", "InterfacesAdded", "PropertiesChanged"))
            row.refused = (logged if dest != "broadcast" else True) and row.unaffected and row.intact
            rows.append(row)

    # --- method calls from someone other than bluetoothd, with a hostile offset
    for who, attacker in (("nobody", nobody), ("root", root)):
        result = await attacker.ask(what="call", dest=target)
        row = Row(f"ReadValue offset -5 from {who} (not bluetoothd)",
                  refused=result["error"] == "org.freedesktop.DBus.Error.AccessDenied")
        await central_and_log_ok(row)
        if who == "root":  # nobody is stopped by the bus's policy before gattemu sees it
            row.refused = row.refused and any("ReadValue" in e.get("detail", "") for e in row.refused_events)
        assert p.running, p.tail()
        rows.append(row)

    # --- another local user on every route of the control API (read and write): refused (the uid owning its
    # loopback connection is not gattemu's), token or not; the owner (root here) and `gattemu ctl` go on with no flags.
    code, document = await asyncio.to_thread(http, "GET", "/v1/openapi.json")
    assert code == 200, code
    operations = [[method.upper(), path.replace("{", "").replace("}", "")]
                  for path, item in json.loads(document)["paths"].items() for method in item if method != "parameters"]
    assert len(operations) >= 20, operations
    swept = await nobody.ask(what="routes", port=PORT, operations=operations, token_file=str(token_path(PORT)))
    assert swept["uid"] == 65534, swept
    let_in = [a for a in swept["answers"] if a[3] not in (401, 403)]
    row = Row(f"another local user (nobody) on all {len(operations)} routes, no token / guessed / token file",
              refused=not let_in and swept["token_file"] != "read")
    row.note += f" {len(swept['answers'])} requests, statuses {sorted({a[3] for a in swept['answers']}, key=str)}, token file: {swept['token_file']}"
    if let_in:
        row.note += f" LET IN: {let_in[:5]}"
    await central_and_log_ok(row)
    ctl = await asyncio.to_thread(subprocess.run, [str(gattemu_bin), "ctl", "status", "--control", API],
                                  capture_output=True, text=True, timeout=30)
    row.refused = row.refused and ctl.returncode == 0 and (await status())["faults"] == []
    row.note += f"; root's gattemu ctl status (no token given): exit {ctl.returncode} {ctl.stderr.strip()[:200]}"
    rows.append(row)

    # --- a web page: CSRF (foreign Origin, text/plain) and DNS rebinding (foreign Host)
    body = json.dumps({"on": "write", "characteristic": "rx", "error": "not-permitted"}).encode()
    csrf = await asyncio.to_thread(http, "POST", "/v1/faults", body,
                                   {"Origin": "http://evil.example", "Content-Type": "text/plain"})
    row = Row("CSRF: POST /v1/faults from http://evil.example, text/plain", refused=csrf[0] in (403, 415))
    await central_and_log_ok(row)
    row.refused = row.refused and (await status())["faults"] == []
    row.note += f" HTTP {csrf[0]}"
    rows.append(row)
    rebinding = await asyncio.to_thread(http, "GET", "/v1/events", None, {"Host": f"evil.example:{PORT}"})
    row = Row("DNS rebinding: GET /v1/events with Host evil.example", refused=rebinding[0] in (403, 421)
              and b'"events"' not in rebinding[1])
    row.note += f" HTTP {rebinding[0]}"
    await central_and_log_ok(row)
    rows.append(row)

    # --- descriptor exhaustion: 1,000 idle connections (2,000 with --long), then 100 event streams that never read
    before = fd_count(p.proc.pid)
    for what, count in (("idle-http", 2000 if LONG else 1000), ("sse", 100)):
        hog = subprocess.Popen(ATTACKER + [what, "--port", str(PORT), "--count", str(count), "--hold", "20"],
                               stdout=subprocess.PIPE, text=True)
        try:
            opened = json.loads(await asyncio.to_thread(hog.stdout.readline))
            row = Row(f"{count} {'idle HTTP connections' if what == 'idle-http' else 'event-stream clients that never read'}",
                      refused=False)
            held = fd_count(p.proc.pid)
            await central_and_log_ok(row)
            t0 = time.monotonic()
            code, _ = await asyncio.to_thread(http, "GET", "/v1/status")
            row.refused = code == 200 and held < before + 200
            row.note += f" opened {opened['opened']}, gattemu fds {before}->{held}, status {code} in {time.monotonic() - t0:.2f}s"
            rows.append(row)
        finally:
            hog.kill()
            hog.wait()

    # --- bluetoothd stops reading the notification sockets (SIGSTOP): notifications until gattemu has dropped some
    # (the socket's buffer is full after a few hundred; at most 1,000), over one keep-alive connection
    bluetoothd_pid = int(subprocess.run(["pidof", "-s", "bluetoothd"], capture_output=True, text=True).stdout.split()[0])
    os.kill(bluetoothd_pid, signal.SIGSTOP)
    try:
        flood = await asyncio.to_thread(notify_until_dropped, seen, 1000)
        t0 = time.monotonic()
        code, _ = await asyncio.to_thread(http, "GET", "/v1/status", timeout=5)
        responsive = code == 200 and flood["slowest"] < 5
    finally:
        os.kill(bluetoothd_pid, signal.SIGCONT)
    drops = [e for e in await events_since(seen) if "not reading its notification socket" in e.get("detail", "")]
    row = Row(f"bluetoothd not reading notification sockets ({flood['sent']:,} notifications)",
              refused=responsive and len(drops) > 0)
    row.note += f" slowest API answer {flood['slowest']:.2f}s, {len(drops)} drops logged"
    # Notifications that did fit are delivered now; drain them before the check.
    while True:
        try:
            await tx.get(timeout=2)
        except AssertionError:
            break
    await central_and_log_ok(row)
    rows.append(row)

    await conn.disconnect()
    code = p.stop()
    assert code == 0, p.tail()
    # The events file holds every check's write, in order.
    logged = [json.loads(line) for line in events_file.read_text().splitlines()]
    writes = [e["value"] for e in logged if e["event"] == "write" and e.get("central") == real]
    expected = [(bytes([0, 0, i]) + bytes(17)).hex() for i in range(1, checks + 1)]
    assert writes == expected, (writes, expected)
    assert logged[-1]["event"] == "stopped", logged[-3:]

    width = max(len(r.attack) for r in rows)
    report(f"{'attack'.ljust(width)} | refused | central unaffected | events intact")
    for r in rows:
        report(f"{r.attack.ljust(width)} | {'yes' if r.refused else 'NO':7} | {'yes' if r.unaffected else 'NO':18} | "
               f"{'yes' if r.intact else 'NO':13} |{r.note}")
    failed = [r for r in rows if not (r.refused and r.unaffected and r.intact)]
    assert not failed, "\n".join(f"{r.attack}: {r.note}" for r in failed)
