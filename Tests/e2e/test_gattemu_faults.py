"""Faults injected through gattemu's control API, observed from the real central.

Runs the gattemu under test (conftest's gattemu_bin); run with `scripts/e2e -k faults`.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import gattemu
import pytest

from conftest import report
from controlapi import api, wait_for_api

ROOT = Path(os.environ.get("GATTEMU_ROOT", Path(__file__).resolve().parents[2]))
GATTEMU = ""  # the binary under test: conftest's gattemu_bin, set for each test below
PORT = 8765
API = f"http://127.0.0.1:{PORT}"
CONFIG_UUID = "00002bb2-0000-1000-8000-00805f9b34fb"
TX_UUID = "1bc50003-0200-d29e-e511-446c609db825"



@pytest.fixture(autouse=True)
def _built(gattemu_bin):
    """Every test here needs the binary: a missing one fails them (conftest's gattemu_bin)."""
    global GATTEMU
    GATTEMU = gattemu_bin


async def connect_when_advertised(central, peripheral):
    """Waits for the control API to report advertising, then connects to the advertised name."""
    body = await wait_for_api(peripheral)
    name = [a for a in body["advertising"]["advertisements"] if "name" in a][0].split('"')[1]
    return await central.connect(name=name)


async def tx_notifications(conn) -> asyncio.Queue[bytes]:
    """Subscribes to the Noke TX notifications; the queue gets those sent from a second on."""
    received: asyncio.Queue[bytes] = asyncio.Queue()
    await conn.subscribe(TX_UUID, received.put_nowait)
    await asyncio.sleep(1)
    while not received.empty():
        received.get_nowait()
    return received


def start_gattemu(start_peripheral, profile: str, extra: str = ""):
    cmd = f"{GATTEMU} run {ROOT}/profiles/{profile} --adapter {{adapter}} --control 127.0.0.1:{PORT} --seed 5 {extra}"
    return start_peripheral(cmd=cmd)


async def test_injected_att_error_reaches_the_central(central, start_peripheral):
    p = start_gattemu(start_peripheral, "bleproof.json")
    await wait_for_api(p)
    status, fault = await api("POST", "/v1/faults", {"on": "write", "characteristic": "config", "error": "0x81", "count": 1})
    assert status == 201, fault
    conn = await central.connect(name="BLEProof")
    try:
        with pytest.raises(Exception) as raised:
            await conn.write(CONFIG_UUID, b'{"x": 1}', response=True)
        assert "0x81" in str(raised.value).lower() or "129" in str(raised.value) or getattr(raised.value, "error_code", None) == 0x81, raised.value
        _, events = await api("GET", "/v1/events?since=0")
        faults = [e for e in events["events"] if e["event"] == "fault"]
        assert len(faults) == 1 and faults[0]["characteristic"] == "config", faults
    finally:
        await conn.disconnect()


async def test_dropped_notification_never_arrives_but_the_next_does(central, start_peripheral):
    p = start_gattemu(start_peripheral, "noke-lock.json")
    conn = await connect_when_advertised(central, p)
    try:
        received = await tx_notifications(conn)
        status, _ = await api("POST", "/v1/faults", {"on": "notify", "characteristic": "tx", "nth": 2, "drop": True})
        assert status == 201
        for value in ("a1", "a2", "a3"):
            status, answer = await api("POST", "/v1/characteristics/tx/notify", {"hex": value})
            assert status == 200, answer
            await asyncio.sleep(0.3)
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            try:
                got.append(await asyncio.wait_for(received.get(), 1))
            except asyncio.TimeoutError:
                pass
        await asyncio.sleep(1)
        while not received.empty():
            got.append(received.get_nowait())
        assert got == [b"\xa1", b"\xa3"], got
    finally:
        await conn.disconnect()


async def test_disconnected_after_the_nth_write(central, start_peripheral):
    p = start_gattemu(start_peripheral, "bleproof.json")
    await wait_for_api(p)
    status, _ = await api("POST", "/v1/faults", {"on": "write", "characteristic": "config", "nth": 2, "disconnect": True})
    assert status == 201
    conn = await central.connect(name="BLEProof")
    try:
        for _ in range(2):
            try:
                await conn.write(CONFIG_UUID, b'{"x": 1}', response=True)
            except Exception:  # noqa: BLE001 - the profile may refuse the value; only the link matters
                pass
        deadline = time.monotonic() + 10
        while conn.is_connected and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert not conn.is_connected
    finally:
        await conn.disconnect()


INFO_UUID = "00002bb0-0000-1000-8000-00805f9b34fb"


async def timed(operation) -> float:
    start = time.monotonic()
    await operation
    return time.monotonic() - start


async def test_delayed_answers_arrive_after_the_delay(central, start_peripheral):
    p = start_gattemu(start_peripheral, "bleproof.json")
    await wait_for_api(p)
    conn = await central.connect(name="BLEProof")
    try:
        plain = await timed(conn.read(INFO_UUID))
        for fault in ({"on": "read", "characteristic": "info", "delay": "1500ms", "count": 1},
                      {"on": "write", "characteristic": "config", "delay": {"min": "1200ms", "max": "1400ms"}, "count": 1}):
            status, body = await api("POST", "/v1/faults", fault)
            assert status == 201, body
        delayed_read = await timed(conn.read(INFO_UUID))
        again = await timed(conn.read(INFO_UUID))
        delayed_write = await timed(conn.write(CONFIG_UUID, b'{"x": 1}', response=True))
        assert delayed_read >= 1.5, (plain, delayed_read)
        assert delayed_write >= 1.2, delayed_write
        assert again < 1.5 and plain < 1.5, (plain, again)  # count 1: only the one answer waited
        _, events = await api("GET", "/v1/events?since=0")
        fired = [e["detail"] for e in events["events"] if e["event"] == "fault"]
        assert len(fired) == 2 and "delay" in fired[0] and "delay" in fired[1], fired
    finally:
        await conn.disconnect()


async def notifications_seen(central, start_peripheral, tmp_path, seed: int, values: list[bytes]) -> list[bytes]:
    """Runs the Noke lock with a probabilistic drop and a probabilistic bit flip on tx
    (seeds derived from `--seed`), notifies `values` one by one and returns what arrived, once as many have arrived
    as gattemu logged sent."""
    scenario = tmp_path / f"scenario-{seed}.json"
    scenario.write_text(json.dumps({"faults": [
        {"on": "notify", "characteristic": "tx", "drop": True, "probability": 0.3},
        {"on": "notify", "characteristic": "tx", "corrupt": {"flipBits": 1}, "probability": 0.5},
    ]}))
    cmd = (f"{GATTEMU} run {ROOT}/profiles/noke-lock.json --adapter {{adapter}} --control 127.0.0.1:{PORT} "
           f"--seed {seed} --scenario {scenario}")
    p = start_peripheral(cmd=cmd)
    conn = await connect_when_advertised(central, p)
    received: list[bytes] = []
    try:
        await conn.subscribe(TX_UUID, received.append)
        await asyncio.sleep(1)
        received.clear()
        _, state = await api("GET", "/v1/status")
        for value in values:
            status, answer = await api("POST", "/v1/characteristics/tx/notify", {"hex": value.hex()})
            assert status == 200, answer
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            _, page = await api("GET", f"/v1/events?since={state['lastEvent']}&limit=10000")
            sent = sum(1 for e in page["events"] if e["event"] == "notify" and e.get("characteristic") == "tx")
            if len(received) >= sent:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # nothing more than that arrives
    finally:
        await conn.disconnect()
        p.stop()
    return list(received)


async def test_seeded_probabilistic_faults_replay_over_the_air(central, start_peripheral, tmp_path):
    values = [bytes([0x51, 0x60, i]) + bytes(17) for i in range(16)]
    first = await notifications_seen(central, start_peripheral, tmp_path, 77, values)
    again = await notifications_seen(central, start_peripheral, tmp_path, 77, values)
    other = await notifications_seen(central, start_peripheral, tmp_path, 78, values)
    assert first == again, "the same --seed gave a different sequence"
    assert 0 < len(first) < len(values), "the drop fault never or always fired"
    assert any(v not in values for v in first), "no bit flip happened"
    assert other != first, "another seed gave the very same sequence"


async def test_notifications_truncated_corrupted_duplicated_and_reordered(central, start_peripheral):
    p = start_gattemu(start_peripheral, "noke-lock.json")
    conn = await connect_when_advertised(central, p)
    try:
        received: list[bytes] = []
        await conn.subscribe(TX_UUID, received.append)
        await asyncio.sleep(1)
        received.clear()
        for fault in ({"on": "notify", "characteristic": "tx", "nth": 1, "truncate": 2},
                      {"on": "notify", "characteristic": "tx", "nth": 2, "corrupt": {"at": 1, "hex": "ee"}},
                      {"on": "notify", "characteristic": "tx", "nth": 3, "duplicate": True},
                      {"on": "notify", "characteristic": "tx", "nth": 4, "reorder": True}):
            status, answer = await api("POST", "/v1/faults", fault)
            assert status == 201, answer
        for value in ("a1a1a1", "a2a2a2", "a3a3a3", "a4a4a4", "a5a5a5"):
            status, answer = await api("POST", "/v1/characteristics/tx/notify", {"hex": value})
            assert status == 200, answer
            await asyncio.sleep(0.3)
        deadline = time.monotonic() + 10
        while len(received) < 6 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1)
        assert [v.hex() for v in received] == ["a1a1", "a2eea2", "a3a3a3", "a3a3a3", "a5a5a5", "a4a4a4"], received
    finally:
        await conn.disconnect()


RX_UUID = "1bc50002-0200-d29e-e511-446c609db825"
# A plain Noke unlock command (Tests/e2e/flows.py): the profile answers 51 60 <byte 2> and zeros to 20 bytes.
NOKE_UNLOCK = bytes.fromhex("0000c20081e628151d34af9c8878e4efbb84311d")


async def test_rewrite_changes_only_the_matched_notification_bytes_and_corrupt_changes_the_write(central, start_peripheral):
    """Through the control API: a rewrite on TX changes exactly the matched bytes of the answer the central receives
    (the rest is the fault-free answer's, byte for byte); a corrupt on a write to RX changes what the profile sees (its
    answer echoes the written byte 2), and the event log has the central's value and the one the profile got."""
    p = start_gattemu(start_peripheral, "noke-lock.json")
    conn = await connect_when_advertised(central, p)
    try:
        received = await tx_notifications(conn)

        async def answer_to(command: bytes) -> bytes:
            await conn.write(RX_UUID, command, response=True)
            return await asyncio.wait_for(received.get(), 10)

        plain = await answer_to(NOKE_UNLOCK)
        assert plain == bytes.fromhex("5160c2") + bytes(17), plain.hex()

        rewrite = {"on": "notify", "characteristic": "tx", "rewrite": {"match": {"hex": "60 c2"}, "replace": {"utf8": "Z"}}}
        status, added = await api("POST", "/v1/faults", rewrite)
        assert status == 201, added
        rewritten = await answer_to(NOKE_UNLOCK)
        assert rewritten == plain.replace(b"\x60\xc2", b"Z") == bytes.fromhex("515a") + bytes(17), rewritten.hex()
        assert (await api("DELETE", "/v1/faults"))[0] == 200

        status, added = await api("POST", "/v1/faults", {"on": "write", "characteristic": "rx", "corrupt": {"at": 2, "hex": "ee"},
                                                          "count": 1})
        assert status == 201, added
        corrupted = await answer_to(NOKE_UNLOCK)
        assert corrupted == bytes.fromhex("5160ee") + bytes(17), corrupted.hex()
        assert await answer_to(NOKE_UNLOCK) == plain, "count 1: the next write is the central's again"

        _, events = await api("GET", "/v1/events?since=0")
        writes = [e for e in events["events"] if e["event"] == "write" and e.get("characteristic") == "rx"]
        assert [e["value"] for e in writes] == [NOKE_UNLOCK.hex()] * 4, writes
        changed = [e for e in events["events"] if e["event"] == "note" and "written value changed by faults" in e.get("detail", "")]
        expected = bytearray(NOKE_UNLOCK)
        expected[2] = 0xEE
        assert [e["value"] for e in changed] == [expected.hex()], changed
        fired = [e["detail"] for e in events["events"] if e["event"] == "fault"]
        assert any("rewrite every 60 C2 → 5A" in d for d in fired) and any("corrupt: bytes at 2 := EE" in d for d in fired), fired
    finally:
        await conn.disconnect()


async def test_silence_and_power_cycle_take_the_device_off_air_for_a_while(central, start_peripheral):
    p = start_gattemu(start_peripheral, "bleproof.json")
    await wait_for_api(p)
    await central.find(name="BLEProof", timeout=30)
    for fault, seconds in (({"silence": "8s"}, 8), ({"powerCycle": "8s"}, 8)):
        status, answer = await api("POST", "/v1/faults", fault)
        assert status == 201, answer
        started = time.monotonic()
        while (await api("GET", "/v1/status"))[1]["advertising"]["advertised"]:
            assert time.monotonic() - started < 3, "still advertising 3 s after the fault"
            await asyncio.sleep(0.1)
        with pytest.raises(TimeoutError):
            await central.find(name="BLEProof", timeout=4)  # within the off-air time: not seen
        adv = await central.find(name="BLEProof", timeout=40)  # and back afterwards
        back = time.monotonic() - started
        assert back >= seconds - 0.5, (fault, back)
        assert adv.name == "BLEProof"


async def test_dropped_read_is_answered_by_bluetoothd_after_its_timeout(central, start_peripheral):
    """gattemu never answers a dropped read; the central cannot see ATT's 30 s transaction timeout
    through BlueZ, because bluetoothd gives up on the app after 5 s (ATTRIBUTE_TIMEOUT in
    src/shared/gatt-db.c) and answers the central with an ATT error itself."""
    p = start_gattemu(start_peripheral, "bleproof.json")
    await wait_for_api(p)
    status, answer = await api("POST", "/v1/faults", {"on": "read", "characteristic": "info", "drop": True, "count": 1})
    assert status == 201, answer
    conn = await central.connect(name="BLEProof")
    try:
        started = time.monotonic()
        with pytest.raises(Exception) as raised:  # noqa: PT011 - the error type depends on the central's stack
            await conn.read(INFO_UUID)
        waited = time.monotonic() - started
        code = getattr(raised.value, "error_code", None)
        report(f"dropped read: the central got {raised.value!r} (ATT error {code}) after {waited:.1f} s")
        assert 4.5 <= waited < 25, (waited, raised.value)
        assert len(await conn.read(INFO_UUID)) > 0  # count 1: the next read is answered
        _, events = await api("GET", "/v1/events?since=0")
        notes = [e.get("detail", "") for e in events["events"] if e["event"] == "note"]
        assert any("read dropped" in n for n in notes), notes
    finally:
        await conn.disconnect()


def raw_call(method: str, path: str, data: bytes | None = None, token: str | None = None) -> tuple[int, dict]:
    # Only the token given here is sent ("": none), not the one controlapi finds for the port.
    answer = gattemu.Client(API, token or "", environ={}).raw(method, path, data,
                                                              headers={"Content-Type": "application/json"})
    return answer.status, answer.json()


async def test_control_api_off_loopback_needs_the_token_and_rejects_bad_requests(start_peripheral):
    refused = start_peripheral(cmd=f"{GATTEMU} run {ROOT}/profiles/noke-lock.json --adapter {{adapter}} --control 0.0.0.0:{PORT}")
    deadline = time.monotonic() + 60
    while refused.running and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert refused.proc.returncode == 2 and "control-token" in refused.output(), refused.output()

    p = start_peripheral(cmd=f"{GATTEMU} run {ROOT}/profiles/noke-lock.json --adapter {{adapter}} "
                             f"--control 0.0.0.0:{PORT} --control-token s3cret")
    deadline = time.monotonic() + 60
    while True:
        assert p.running and time.monotonic() < deadline, p.output()
        try:
            status, _ = await asyncio.to_thread(raw_call, "GET", "/v1/status", None, "s3cret")
            if status == 200:
                break
        except gattemu.ConnectionFailed:
            pass
        await asyncio.sleep(0.3)
    cases = [
        ("GET", "/v1/status", None, None, 401),
        ("GET", "/v1/status", None, "wrong", 401),
        ("POST", "/v1/characteristics/tx/notify", b'{"hex": ', "s3cret", 400),          # malformed JSON
        ("POST", "/v1/characteristics/nope/notify", b'{"hex": "01"}', "s3cret", 404),   # unknown characteristic
        ("POST", "/v1/faults", b'{"on": "write", "error": "teapot"}', "s3cret", 400),    # unknown error name
        ("POST", "/v1/triggers/no-such-trigger", b"{}", "s3cret", 404),
        ("GET", "/v1/nothing", None, "s3cret", 404),
    ]
    for method, path, data, token, expected in cases:
        status, body = await asyncio.to_thread(raw_call, method, path, data, token)
        assert status == expected and body.get("error"), (method, path, status, body)
    assert p.running, "a bad request must not end the emulator"
    status, _ = await asyncio.to_thread(raw_call, "GET", "/v1/status", None, "s3cret")
    assert status == 200
