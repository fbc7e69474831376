"""The relay tests' ground truth (issue 29), without the relay: a BLE peripheral gattemu did not write (the Bumble
device, fixtures/bumble_device.py, on a controller of its own) and the shipped profiles each give the test central a
byte transcript that two runs reproduce exactly. "Byte-identical through the relay" compares a relayed run with these.

Also: the Bumble device answers as its protocol says (long value, request -> notification, command -> indication,
application and standard ATT errors, User Description), and with --secure refuses an unencrypted link until the
central pairs (just works, bonding). The controller plan (conftest.CONTROLLER_PLAN) is checked against the VM.
"""
from __future__ import annotations

import importlib.util
import os

import pytest

from conftest import BUMBLE_DEVICE, CONTROLLER_PLAN, controller_powered, relay_controllers, report
from flows import (BUMBLE_BLOB, BUMBLE_REQUEST, BUMBLE_SERVICE, FLOWS, Step, bumble_flow, quiet, transcript_diff)

SEED = 7  # gattemu's --seed and the flows' seed for the shipped profiles


def device_module():
    """fixtures/bumble_device.py as a module: its protocol functions say what the device must answer."""
    spec = importlib.util.spec_from_file_location("bumble_device", BUMBLE_DEVICE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def printer(prefix: str):
    return lambda line: print(f"{prefix}: {line}")


def test_transcript_diff_names_the_first_difference():
    a = [Step("read", "x", received=b"\x01\x02"), Step("write", "y", sent=b"\x03"), Step("notify", "z", received=b"\x04")]
    assert transcript_diff(a, list(a)) is None
    b = [a[0], Step("write", "y", sent=b"\x03"), Step("notify", "z", received=b"\x05")]
    diff = transcript_diff(a, b, ("direct", "relayed"))
    assert diff == ("step 3 differs:\n  after step 2: write y sent 03\n  direct: notify z received 04\n"
                    "  relayed: notify z received 05"), diff
    c = [a[0], Step("write", "y", sent=b"\x03", error=0x85)]
    assert "step 2 differs" in transcript_diff(a, c) and "error 0x85" in transcript_diff(a, c)
    assert transcript_diff(a, a[:2]) == "first has 3 steps, second 2; first goes on with step 3: notify z received 04"


def test_controller_plan_fits_the_sandbox(env):
    """Each layout's roles are four different controllers, and the ones bluetoothd must drive for the relay
    (upstream, mirror; the gattemu device) are not claimed twice."""
    for device, plan in CONTROLLER_PLAN.items():
        roles = relay_controllers(device)
        assert len(set(roles.values())) == 4, (device, roles)
        assert set(plan) == {"device", "upstream", "mirror"}
    assert CONTROLLER_PLAN["bumble"]["device"] not in (CONTROLLER_PLAN["bumble"]["upstream"], CONTROLLER_PLAN["bumble"]["mirror"])
    report("controller plan: " + "; ".join(f"{d}: " + ", ".join(f"{r} {a}" for r, a in relay_controllers(d).items())
                                           for d in CONTROLLER_PLAN))


async def test_relay_controllers_are_bluetoothds(env, central):
    """The relay's upstream and mirror controllers of both layouts are powered by bluetoothd as the VM brings them
    up (the Bumble device's, GATTEMU_CENTRAL3, too: it is the mirror when gattemu is the device)."""
    for device in CONTROLLER_PLAN:
        roles = relay_controllers(device)
        for role in ("upstream", "mirror"):
            assert await controller_powered(roles[role]), f"{role} {roles[role]} of the {device} layout is not powered"


async def test_bumble_device_flow_twice_gives_identical_transcripts(central, start_bumble_device):
    bd = device_module()
    p = start_bumble_device(name="BumbleDev", seed=3)
    adv = await p.advertising(central, name="BumbleDev", service_uuid=BUMBLE_SERVICE)
    assert adv.manufacturer_data == {0xFFFF: b"bd\x03"}, adv
    assert adv.address == os.environ["GATTEMU_CENTRAL3_ADDRESS"].upper(), "advertises from its controller's address"
    first = await bumble_flow(central, printer("first"))
    second = await bumble_flow(central, printer("second"), address=adv.address)  # the relay tests' way
    for step in first.transcript:
        print(f"  {step}")

    # What the device's protocol says it answers.
    assert first.mtu == 185
    assert first.blob == bd.blob(3) and len(first.blob) == 300 and len(set(first.blob)) > 100
    assert first.description == bd.DESCRIPTION
    requests = [s.sent for s in first.transcript if s.op == "write" and s.uuid == BUMBLE_REQUEST]
    assert len(requests) == 3 and requests[0][0] == bd.HELLO
    assert first.responses == [bd.answer(3, n, r) for n, r in enumerate(requests, 1)]
    command = next(s.sent for s in first.transcript if s.op == "write-cmd")
    assert first.statuses == [bd.status(3, 4, command)]
    assert first.errors == {"FAULTY read": bd.FAULTY_ERROR, "LOCKED write": 0x03}
    assert first.locked == bd.LOCKED_VALUE
    # EVENTS offers notify and indicate; the app enabled indications and the device sent each event so (a
    # notification would have reached no subscriber of this central, and the flow would have waited for it).
    assert first.events == [bytes([0xE0, n]) for n in range(1, 4)]
    assert [s.op for s in first.transcript] == [
        "read", "read-descriptor", "subscribe", "subscribe", "subscribe", "write", "notify", "indicate", "write", "notify",
        "indicate", "write", "notify", "indicate", "write-cmd", "indicate", "read", "read", "write"]

    diff = transcript_diff(first.transcript, second.transcript)
    assert diff is None, diff
    # The transcript holds the bytes: other payloads give other answers, and the diff says where.
    other = await bumble_flow(central, quiet, seed=1)
    diff = transcript_diff(first.transcript, other.transcript)
    assert diff is not None and diff.startswith("step 6 differs"), diff
    out = await p.output_when(lambda o: o.count("indication confirmed") >= 3)
    assert out.count("-> notify RESPONSE") == 9 and out.count("indication confirmed") == 3, out
    assert out.count("indicated to") == 9 and "notified to" not in out, "each event as the app enabled: an indication"
    assert p.stop() == 0, p.tail()
    assert p.output().rstrip().endswith("bumble-device: stopped"), p.tail()
    report(f"bumble device: {len(first.transcript)} steps, two runs byte-identical")


async def test_secure_bumble_device_needs_pairing(central, start_bumble_device):
    bd = device_module()
    p = start_bumble_device(name="BumbleSec", secure=True)
    await p.advertising(central, name="BumbleSec", service_uuid=BUMBLE_SERVICE)
    conn = await central.connect(name="BumbleSec")
    try:
        refused = {}
        for what, operation in (("read", conn.read(BUMBLE_BLOB)), ("write", conn.write(BUMBLE_REQUEST, b"\x01x"))):
            with pytest.raises(Exception) as error:
                await operation
            refused[what] = getattr(error.value, "error_code", error.value)
        print(f"before pairing: {refused}")
        assert refused == {"read": 0x0F, "write": 0x0F}, "insufficient encryption before pairing"
        await conn.pair("NoInputNoOutput", mitm=False)
        assert conn.encrypted
        assert await conn.read(BUMBLE_BLOB) == bd.blob(1)
    finally:
        await conn.disconnect()
    # The whole flow after pairing, twice, byte-identical.
    first = await bumble_flow(central, printer("paired"), name="BumbleSec", pair=True)
    second = await bumble_flow(central, quiet, name="BumbleSec", pair=True)
    try:
        assert first.blob == bd.blob(1) and first.errors == {"FAULTY read": bd.FAULTY_ERROR, "LOCKED write": 0x03}
        diff = transcript_diff(first.transcript, second.transcript)
        assert diff is None, diff
        out = p.output()
        assert "paired with" in out and "encrypted: True" in out, out
    finally:
        await central.last_connection.forget_keys()


@pytest.mark.parametrize("device", ["noke", "bleproof", "leaf"])
async def test_shipped_profile_flow_is_byte_identical_across_runs(device, central, start_gattemu):
    """gattemu --seed 7 and the flow's seed 7, two gattemu processes: the same transcript, byte for byte (what
    the same flow through `gattemu relay` is compared with)."""
    profile, flow = FLOWS[device]
    runs = []
    for attempt in range(2):
        p = start_gattemu(profile, args=["--seed", str(SEED)])
        await p.wait_ready()
        # The second run picks the device by address, as the relay tests pick the mirror.
        address = runs[0].adv.address if runs else None
        runs.append(await flow(central, printer(f"{device} {attempt + 1}") if attempt == 0 else quiet, seed=SEED,
                               address=address))
        assert p.stop() == 0
    assert runs[1].adv.address == address
    first, second = (run.transcript for run in runs)
    for step in first:
        print(f"  {step}")
    assert any(s.op in ("notify", "indicate") for s in first) and any(s.op.startswith("write") for s in first)
    diff = transcript_diff(first, second)
    assert diff is None, diff
    report(f"{device}: {len(first)} steps, two gattemu --seed {SEED} runs byte-identical")
