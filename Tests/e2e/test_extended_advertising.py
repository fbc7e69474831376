"""Extended advertising and several advertising sets (issue 45), judged by a Bumble central with its own stack.

gattemu runs on a Bluetooth 5 controller of the sandbox's radio (GATTEMU_EXT_PERIPH) with three sets: a connectable
one on the 2M secondary PHY carrying 251 bytes of advertising data, a beacon on the Coded PHY with a scan response,
and a legacy beacon. A Bumble central on another Bluetooth 5 controller (GATTEMU_EXT_CENTRAL) scans extended
advertising and must see each set: its bytes, its PHYs, its scan response. A profile asking for more sets than the
adapter has, or for a secondary channel a Bluetooth 4 controller (GATTEMU_PERIPH) does not offer, is refused before
anything is registered, with the error located in the profile.
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time

import pytest

from central import open_central
from conftest import give_back, report
from controlapi import wait_for_api

NAME = "ExtGateway"
# Manufacturer data of the connectable set, sized so that its advertising data is 251 bytes: flags 3 (a discoverable
# set: the kernel adds them), the name 2 + 10, the 16-bit service list 2 + 2, the manufacturer data 2 + 2 + 228.
FILLER = bytes((index * 7 + 1) & 0xFF for index in range(228))
IBEACON = bytes([0x02, 0x15]) + bytes([0x11] * 16) + bytes([0x00, 0x01, 0x00, 0x2A, 0xC5])
EDDYSTONE_URL = bytes([0x10, 0x00, 0x03]) + b"example.com"
TLM_PREFIX = bytes([0xAA, 0xFE, 0x20, 0x00])  # an Eddystone TLM frame: its byte after this is a counter
PROFILE = {
    "format": 1,
    "device": {"name": NAME},
    "advertisements": [
        {"id": "gateway", "localName": NAME, "serviceUUIDs": ["180f"], "secondaryChannel": "2M", "discoverable": True,
         "manufacturerData": {"0xFFFF": {"hex": FILLER.hex()}}},
        {"id": "ibeacon", "type": "broadcast", "secondaryChannel": "Coded",
         "manufacturerData": {"0x004C": {"hex": IBEACON.hex()}},
         "scanResponse": {"serviceData": {"feaa": {"hex": EDDYSTONE_URL.hex()}}}},
        {"id": "tlm", "type": "broadcast", "serviceData": {"feaa": "20 00 {u8(beat)} {fill(0, 11)}"}},
    ],
    # The TLM beacon's counter moves on a timer that starts with the device: nobody connects to a beacon.
    "state": {"beat": 0},
    "timers": [{"id": "rotate", "every": "300ms", "start": "run"}],
    "rules": [{"on": {"timer": "rotate"}, "do": {"set": {"beat": {"increment": 1}}}}],
    "services": [{"id": "battery", "uuid": "180f",
                  "characteristics": [{"id": "level", "uuid": "2a19", "flags": ["read"], "value": {"hex": "64"}}]}],
}


def bluetooth5(env) -> tuple[str, str]:
    """The sandbox's two Bluetooth 5 controllers (its patched btvirt brings them up beside the LE ones)."""
    missing = [v for v in ("GATTEMU_EXT_PERIPH", "GATTEMU_EXT_CENTRAL") if not env.get(v)]
    if missing:
        pytest.fail(f"the sandbox brought up no {', '.join(missing)} (scripts/build-bluez's btvirt, "
                    "GATTEMU_EXT_CONTROLLERS >= 2): extended advertising cannot be judged", pytrace=False)
    return env["GATTEMU_EXT_PERIPH"], env["GATTEMU_EXT_CENTRAL"]


def ad_structures(data: bytes) -> list[tuple[int, bytes]]:
    found, index = [], 0
    while index < len(data) and data[index]:
        length = data[index]
        found.append((data[index + 1], bytes(data[index + 2:index + 1 + length])))
        index += 1 + length
    return found


def has(structures, ad_type: int, value: bytes) -> bool:
    return (ad_type, value) in structures


class Heard:
    """One advertisement as a scanner's host has it: the data of a chain of reports joined (Bumble 0.0.236 hands each
    report of a chain on alone), and, for a scannable set, its scan response after it (Bumble joins those)."""

    def __init__(self, advertisement, data: bytes):
        self.address = str(advertisement.address)
        self.data = data
        self.structures = ad_structures(data)
        self.is_legacy = advertisement.is_legacy
        self.is_connectable = advertisement.is_connectable
        self.is_scan_response = advertisement.is_scan_response
        self.primary_phy = advertisement.primary_phy
        self.secondary_phy = advertisement.secondary_phy

    def __repr__(self) -> str:
        return (f"Heard({self.address}, {len(self.data)} bytes, legacy={self.is_legacy}, connectable={self.is_connectable}, "
                f"scan response={self.is_scan_response}, PHYs {self.primary_phy}/{self.secondary_phy})")


async def scan_extended(device, done, timeout: float) -> list[Heard]:
    """What Bumble's device hears scanning extended advertising (1M and Coded), until `done(heard)` holds; what it
    heard so far after `timeout`."""
    heard: list[Heard] = []
    partial: dict[str, bytes] = {}
    news = asyncio.Event()

    def on_advertisement(advertisement):
        key = str(advertisement.address)
        # A scan response comes joined to its set's advertising data in `data` (`data_bytes` is the response alone).
        this = bytes(advertisement.data) if advertisement.is_scan_response else bytes(advertisement.data_bytes)
        data = partial.pop(key, b"") + this
        if not advertisement.is_complete and not advertisement.is_truncated:
            partial[key] = data  # more of this chain to come
            return
        heard.append(Heard(advertisement, data))
        news.set()

    device.on("advertisement", on_advertisement)
    await device.start_scanning(legacy=False, active=True, filter_duplicates=False)
    try:
        end = time.monotonic() + timeout
        while not done(heard) and time.monotonic() < end:
            news.clear()
            try:
                await asyncio.wait_for(news.wait(), max(0.1, end - time.monotonic()))
            except asyncio.TimeoutError:
                break
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()
    return heard


def sets_seen(heard: list[Heard]) -> dict[str, Heard]:
    """What shows each set of PROFILE, by id, and the beacon with its scan response."""
    seen: dict[str, Heard] = {}
    for h in heard:
        if has(h.structures, 0xFF, bytes([0xFF, 0xFF]) + FILLER):
            seen.setdefault("gateway", h)
        if has(h.structures, 0xFF, bytes([0x4C, 0x00]) + IBEACON):
            seen.setdefault("ibeacon", h)
            if h.is_scan_response and has(h.structures, 0x16, bytes([0xAA, 0xFE]) + EDDYSTONE_URL):
                seen.setdefault("ibeacon scan response", h)
        if any(t == 0x16 and v.startswith(TLM_PREFIX) and len(v) == 16 for t, v in h.structures):
            seen.setdefault("tlm", h)
    return seen


def beats(heard: list[Heard]) -> set[int]:
    """The TLM beacon's counter values heard."""
    return {v[4] for h in heard for t, v in h.structures if t == 0x16 and v.startswith(TLM_PREFIX) and len(v) == 16}


def without_flags(structures: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """The structures but the flags, sorted: the kernel writes the flags (their bits depend on the controller)."""
    return sorted(s for s in structures if s[0] != 0x01)


@pytest.fixture
async def extended_central(env):
    """A Bumble central on the sandbox's second Bluetooth 5 controller; the controller goes back to bluetoothd."""
    _, adapter = bluetooth5(env)
    central = await open_central("bumble", adapter=adapter, address="F0:E0:D0:00:00:0E")
    try:
        yield central
    finally:
        await central.close()
        await give_back(adapter)


async def test_a_central_scanning_extended_advertising_sees_every_set(bluez_582, env, extended_central, start_gattemu,
                                                                       tmp_path):
    peripheral, _ = bluetooth5(env)
    profile = tmp_path / "extended.json"
    profile.write_text(json.dumps(PROFILE, indent=2))
    p = start_gattemu(str(profile), adapter=peripheral, args=["--control", "127.0.0.1:8765"])
    status = await wait_for_api(p)

    # What gattemu says it advertises: three sets, each against this adapter's limits.
    data = status["advertising"]["data"]
    assert [d.get("secondaryChannel") for d in data] == ["2M", "Coded", None], data
    assert data[0]["advertisingData"]["length"] == 251 and data[0]["advertisingData"]["limit"] == 251, data[0]
    assert data[0]["scanResponse"]["length"] == 0, "a connectable extended set has no scan response"
    assert data[2]["advertisingData"]["limit"] == 31, "a legacy set is held to 31 bytes"

    want = {"gateway", "ibeacon", "ibeacon scan response", "tlm"}
    heard = await scan_extended(extended_central.device, lambda h: want <= set(sets_seen(h)) and len(beats(h)) >= 3,
                                timeout=60)
    seen = sets_seen(heard)
    assert want <= set(seen), f"heard {sorted(seen)} of {sorted(want)} in {heard[:12]}; gattemu:\n{p.tail()}"

    # On air exactly what the status says each set carries (the flags are the kernel's; the order may differ).
    def said(index: int, part: str) -> list[tuple[int, bytes]]:
        return ad_structures(bytes.fromhex(data[index][part]["hex"]))

    assert without_flags(seen["gateway"].structures) == without_flags(said(0, "advertisingData")), seen["gateway"]
    assert [(t, len(v)) for t, v in without_flags(seen["tlm"].structures)] == [
        (t, len(v)) for t, v in without_flags(said(2, "advertisingData"))], seen["tlm"]
    assert without_flags(seen["ibeacon scan response"].structures) == without_flags(
        said(1, "advertisingData") + said(1, "scanResponse")), seen["ibeacon scan response"]

    gateway = seen["gateway"]
    assert len(gateway.data) == 251, f"{len(gateway.data)} bytes of advertising data heard, want 251"
    assert any(t == 0x01 and v[0] & 0x02 for t, v in gateway.structures), "a discoverable set's flags say so"
    assert not gateway.is_legacy and gateway.is_connectable, gateway
    assert gateway.secondary_phy == 2, f"secondary PHY {gateway.secondary_phy}, want LE 2M"
    assert has(gateway.structures, 0x09, NAME.encode()), f"the name is in the advertising data: {gateway.structures}"
    assert has(gateway.structures, 0x03, bytes([0x0F, 0x18])), gateway.structures

    beacon = seen["ibeacon scan response"]
    assert not beacon.is_legacy and not beacon.is_connectable, beacon
    assert (beacon.primary_phy, beacon.secondary_phy) == (3, 3), beacon

    assert seen["tlm"].is_legacy, "the set without a secondary channel is legacy advertising"
    assert len(beats(heard)) >= 3, f"the beacon's counter did not move on air: {sorted(beats(heard))}"
    assert len({seen[k].address for k in ("gateway", "ibeacon", "tlm")}) == 3, "each set has its own address"
    report(f"extended advertising: 3 sets heard by a Bumble central ({len(heard)} advertisements): "
           f"connectable 2M set of {len(gateway.data)} bytes, Coded beacon with its scan response, legacy beacon "
           f"counting {sorted(beats(heard))[:5]}…")
    assert p.stop() == 0, p.tail()


def run_refused(gattemu_bin: str, profile_text: str, adapter: str, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "refused.json"
    path.write_text(profile_text)
    r = subprocess.run([gattemu_bin, "run", str(path), "--adapter", adapter, "--control", "off"], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    print(f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def test_more_sets_or_a_phy_than_the_adapter_offers_is_refused_where_the_profile_asks(env, gattemu_bin, tmp_path):
    peripheral, _ = bluetooth5(env)
    # What `gattemu adapters` says of each kind of controller.
    listed = subprocess.run([gattemu_bin, "adapters"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    lines = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
    assert "extended: 1M,2M,Coded" in lines.get(peripheral, ""), listed.stdout
    assert "extended: no" in lines.get(env["GATTEMU_PERIPH"], ""), listed.stdout
    # Four sets on a controller with three advertising sets: refused at the fourth, nothing registered.
    four = {"format": 1, "advertisements": [{"type": "broadcast", "serviceData": {"feaa": f"2{n} 00"}} for n in range(4)]}
    r = run_refused(gattemu_bin, json.dumps(four, indent=2), peripheral, tmp_path)
    assert r.returncode == 1, r
    match = re.search(r"refused\.json:(\d+):(\d+) advertisements\[(\d)\]: " + peripheral
                      + r" has (\d) advertising instances? free \(SupportedInstances \d", r.stderr)
    assert match, r.stderr
    assert int(match.group(3)) == int(match.group(4)) == 3, r.stderr

    # A secondary channel on a Bluetooth 4 controller: refused at the field, with the adapter's reason.
    coded = json.dumps({"format": 1, "advertisements": [{"localName": "X"}, {"type": "broadcast", "secondaryChannel": "Coded",
                                                                            "serviceData": {"feaa": "20 00"}}]}, indent=2)
    r = run_refused(gattemu_bin, coded, env["GATTEMU_PERIPH"], tmp_path)
    assert r.returncode == 1, r
    assert re.search(r"refused\.json:\d+:\d+ advertisements\[1\]\.secondaryChannel: " + env["GATTEMU_PERIPH"]
                     + r" has no extended advertising", r.stderr), r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, "one line, located"
