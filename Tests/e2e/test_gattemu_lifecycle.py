"""gattemu's process contract: clean exit on SIGTERM/SIGINT (the device
vanishes), exit 2 for a bad profile before BlueZ is touched, exit 1 with a
one-line reason for runtime failures, and its GATT objects refuse D-Bus
callers other than bluetoothd."""
import asyncio
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import profile_path
from flows import BLEPROOF_INFO, BLEPROOF_SERVICE, NOKE_SERVICE

ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"


def run_gattemu(gattemu_bin, *args, timeout=30):
    r = subprocess.run([gattemu_bin, *args], capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    print(f"$ gattemu {' '.join(args)} -> exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


async def test_sigterm_exits_zero_and_device_vanishes(central, start_gattemu):
    p = start_gattemu("bleproof.json")
    await p.advertising(central, name="BLEProof", service_uuid=BLEPROOF_SERVICE)
    conn = await central.connect(name="BLEProof")
    assert await conn.read(BLEPROOF_INFO) == b"iPhone ABC"
    await conn.disconnect()
    rc = p.stop()
    assert rc == 0, f"exit {rc}; output:\n{p.tail()}"
    await central.wait_gone(name="BLEProof", timeout=30)


async def test_sigint_exits_zero_and_device_vanishes(central, start_gattemu):
    p = start_gattemu("noke-lock.json")
    await p.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    p.proc.send_signal(signal.SIGINT)
    try:
        rc = p.proc.wait(15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gattemu still running 15 s after SIGINT; output:\n{p.tail()}")
    assert rc == 0, f"exit {rc}; output:\n{p.tail()}"
    await central.wait_gone(name_prefix="NOKE", service_uuid=NOKE_SERVICE, timeout=30)


def test_broken_profile_exits_2_before_bluez(gattemu_bin, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text(Path(profile_path("bleproof.json")).read_text()
                      .replace('"flags": ["indicate"]', '"flags": ["indicat"]'))
    # hci9 does not exist: a run that reached BlueZ would fail with exit 1 instead.
    t0 = time.monotonic()
    r = run_gattemu(gattemu_bin, "run", str(broken), "--adapter", "hci9")
    assert r.returncode == 2, r
    assert time.monotonic() - t0 < 20
    text = r.stderr + r.stdout
    assert re.search(r"broken\.json:\d+:\d+", text), text          # located message
    assert "indicat" in text, text


def test_validate_shipped_and_broken(gattemu_bin, tmp_path):
    r = run_gattemu(gattemu_bin, "validate", *(profile_path(p) for p in
                                               ("noke-lock.json", "bleproof.json", "leaf-reader.json")))
    assert r.returncode == 0, r
    broken = tmp_path / "b.json"
    broken.write_text('{"format": 1, "services": [ }')
    r = run_gattemu(gattemu_bin, "validate", str(broken))
    assert r.returncode == 2, r


def test_missing_adapter_exits_1(gattemu_bin):
    r = run_gattemu(gattemu_bin, "run", profile_path("bleproof.json"), "--adapter", "hci9")
    assert r.returncode == 1, r
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "hci9" in lines[0], r.stderr


def test_control_port_in_use_exits_1_with_one_line(gattemu_bin):
    """Another process holds the control port: one readable line, exit 1, nothing left registered."""
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_gattemu(gattemu_bin, "run", profile_path("bleproof.json"), "--adapter", os.environ["GATTEMU_PERIPH"],
                        "--control", f"127.0.0.1:{port}")
    assert r.returncode == 1, r
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines == [f"gattemu: control API on 127.0.0.1:{port}: address already in use"], r.stderr
    # The API binds before bluetoothd is asked for anything: nothing was registered, nothing went on air.
    assert "advertising" not in r.stdout and "started" not in r.stdout, r.stdout


async def test_the_control_api_answers_once_the_device_is_on_air(central, start_gattemu):
    """Whoever sees the device (a phone, a CI job waiting for `started`) can use the API at once: it listens
    before the device is registered, and answers 200 by the time the device has started (503 with
    Retry-After only before that; never a refused connection)."""
    from controlapi import call
    port = 8774
    p = start_gattemu("bleproof.json", args=["--control", f"127.0.0.1:{port}"])
    out = await p.output_when(lambda o: " started " in o, timeout=60)
    status, body = call("GET", "/v1/status", port=port)  # a refused connection raises here
    if status == 503:  # the scenario's faults are installed just after `started`: a moment's 503
        assert "starting" in body["error"], body
        await asyncio.sleep(1)
        status, body = call("GET", "/v1/status", port=port)
    assert status == 200, (status, body)
    lines = out.splitlines()
    listening = next(i for i, line in enumerate(lines) if "control API on http://" in line)
    on_air = next(i for i, line in enumerate(lines) if re.search(r" advertising +name", line))
    assert listening < on_air, out
    await p.advertising(central, name="BLEProof", service_uuid=BLEPROOF_SERVICE)
    assert call("GET", "/v1/status", port=port)[1]["advertising"]["advertised"], p.tail()


def test_adapters_lists_peripheral_adapter(gattemu_bin):
    r = run_gattemu(gattemu_bin, "adapters")
    assert r.returncode == 0, r
    assert os.environ["GATTEMU_PERIPH"] in r.stdout, r.stdout


# ------------------------------------------------------------------ security
def _unique_name_of(pid: int) -> str | None:
    import dbus
    bus = dbus.SystemBus()
    dbus_iface = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"),
                                "org.freedesktop.DBus")
    for n in dbus_iface.ListNames():
        if not str(n).startswith(":"):
            continue
        try:
            if int(dbus_iface.GetConnectionUnixProcessID(n)) == pid:
                return str(n)
        except dbus.exceptions.DBusException:
            pass
    return None


CHRC = "org.bluez.GattCharacteristic1"
# Probed when nothing else tells the paths (UnknownObject = not there).
GUESSES = [f"/org/gattemu/app{a}/service{s}/char{c}" for a in ("0", "") for s in range(3) for c in range(6)]


def _char_paths(unique: str, log: str) -> tuple[list[str], str]:
    """GattCharacteristic1 object paths of gattemu's application. The system
    bus policy (bluetooth.conf) lets root send GattCharacteristic1,
    ObjectManager and Properties calls but not Introspect, so: Introspect if
    the bus allows it, else GetManagedObjects on likely roots, else object
    paths in gattemu's log, else likely paths."""
    import dbus
    from xml.etree import ElementTree
    bus = dbus.SystemBus()
    found, notes = [], []

    def walk(path: str, depth: int = 0):
        if depth > 8:
            return
        try:
            xml = bus.call_blocking(unique, path, "org.freedesktop.DBus.Introspectable", "Introspect",
                                    "", [], timeout=5)
        except dbus.exceptions.DBusException as e:
            notes.append(f"Introspect {path}: {e.get_dbus_name()}")
            return
        root = ElementTree.fromstring(str(xml))
        if any(i.get("name") == CHRC for i in root.findall("interface")):
            found.append(path)
        for node in root.findall("node"):
            walk(path.rstrip("/") + "/" + node.get("name"), depth + 1)

    walk("/")
    log_paths = sorted(set(m.rstrip("/") for m in re.findall(r"(/(?:org|com)/[A-Za-z0-9_/]+)", log)
                           if not m.startswith("/org/bluez")))
    if not found:
        roots = ["/", "/org/gattemu", "/org/gattemu/app0", "/org/gattemu/app"]
        for m in log_paths:
            parts = m.split("/")
            roots += ["/".join(parts[:i]) for i in range(3, len(parts) + 1)]
        for r in dict.fromkeys(roots):
            try:
                objs = bus.call_blocking(unique, r, "org.freedesktop.DBus.ObjectManager",
                                         "GetManagedObjects", "", [], timeout=5)
            except dbus.exceptions.DBusException as e:
                notes.append(f"GetManagedObjects {r}: {e.get_dbus_name()}")
                continue
            found += [str(p) for p, ifaces in objs.items() if CHRC in ifaces]
            if found:
                notes.append(f"from GetManagedObjects {r}")
                break
    if not found:
        found = [m for m in log_paths if re.search(r"char|/c\d|rx|tx|session|info|config|status", m)]
        notes.append(f"paths from log: {found}")
    if not found:
        found = GUESSES
        notes.append("probing likely paths")
    return found, "; ".join(notes)


async def test_gatt_objects_refuse_other_callers(central, start_gattemu):
    import dbus
    p = start_gattemu("bleproof.json", args=["-v"])
    await p.advertising(central, name="BLEProof", service_uuid=BLEPROOF_SERVICE)
    unique = _unique_name_of(p.proc.pid)
    assert unique, "gattemu's connection to the system bus not found (by PID)"
    paths, notes = _char_paths(unique, p.output())
    assert paths, f"no GattCharacteristic1 object path found ({notes}); output:\n{p.tail()}"
    print(f"gattemu {unique}: characteristics {paths} ({notes})")
    bus = dbus.SystemBus()
    denied = 0
    for path in paths:
        for member, sig, args in (("ReadValue", "a{sv}", [{}]),
                                  ("WriteValue", "aya{sv}", [[0x31], {}])):
            with pytest.raises(dbus.exceptions.DBusException) as ei:
                bus.call_blocking(unique, path, "org.bluez.GattCharacteristic1", member, sig, args,
                                  timeout=5)
            err = ei.value
            print(f"{member} {path}: {err.get_dbus_name()}: {err.get_dbus_message()}")
            if paths is GUESSES and err.get_dbus_name() == "org.freedesktop.DBus.Error.UnknownObject":
                break  # a guess that does not exist
            denied += 1
            assert err.get_dbus_name() == ACCESS_DENIED, f"{member} on {path}: {err.get_dbus_name()}: {err}"
            # from gattemu itself, not the bus daemon's policy ("Rejected send message, ...")
            assert not str(err.get_dbus_message() or "").startswith("Rejected send message"), str(err)
    assert denied >= 2, f"no characteristic object of gattemu's found among {paths}"
    # and the refusal did not hurt the real client
    conn = await central.connect(name="BLEProof")
    try:
        assert await conn.read(BLEPROOF_INFO) == b"iPhone ABC"
    finally:
        await conn.disconnect()
