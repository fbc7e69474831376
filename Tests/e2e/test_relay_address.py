"""gattemu relay --address: `device` gives the mirror's controller the device's public address where the kernel can
set it (management Set Public Address) and refuses with the reason where it cannot; `own` advertises from the
controller's own address and says so in the event log. btvirt's controllers (hci_vhci) offer no public-address
configuration, so in the sandbox `device` is refused: the test reads what the kernel says of the controller
(`btmgmt config`) and asserts the behaviour that goes with it."""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time

import pytest

from central import amgmt
from conftest import kernel_has_enhanced_channels, report
from flows import NOKE_SERVICE, noke_flow
from test_relay import relay_adapters  # noqa: F401 - the relay's controllers, a fixture

NOKE = "noke-lock.json"


async def controller_address(adapter: str) -> str:
    """The controller's public address as the kernel reports it (`btmgmt info`)."""
    out = await amgmt("--index", adapter.removeprefix("hci"), "info")
    found = re.search(r"addr ([0-9A-F:]{17})", out)
    assert found, out
    return found.group(1)


async def can_set_public_address(adapter: str) -> bool:
    """Whether the kernel offers the public-address option for the controller (Read Controller Configuration)."""
    out = await amgmt("--index", adapter.removeprefix("hci"), "config")
    found = re.search(r"supported options:([^\n]*)", out)
    assert found, f"btmgmt config printed no supported options:\n{out}"
    return "public-address" in found.group(1)


@pytest.mark.usefixtures("relay_single_att_channel")
async def test_address_device_takes_the_device_address_or_refuses(central, start_gattemu, start_peripheral, gattemu_bin,
                                                                   relay_adapters, needs_separate_stack, env, tmp_path):
    upstream, mirror, mirror_address = relay_adapters
    device = start_gattemu(NOKE)
    adv = await device.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    settable = await can_set_public_address(mirror)
    argv = [gattemu_bin, "relay", adv.address, "--adapter", mirror, "--upstream-adapter", upstream, "--address", "device"]

    if not settable:
        started = time.monotonic()
        result = await asyncio.to_thread(subprocess.run, argv + ["--control", "off"], capture_output=True, text=True,
                                         timeout=120, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 1, (result.returncode, result.stderr)
        assert len(lines) == 1, result.stderr
        assert re.search(rf"--address device: {mirror} cannot take the device's address: the kernel offers no "
                         r"public-address configuration for this controller", lines[0]), lines[0]
        # Refused before anything changed: the mirror's controller keeps its address.
        assert await controller_address(mirror) == mirror_address
        report(f"relay --address device on {mirror} (hci_vhci, no public-address option): exit 1 in {took:.1f} s: {lines[0]}")
        return

    # A controller that can take the device's address: the central finds the mirror at the device's address and the
    # Noke flow (its name embeds that address) passes through it; on SIGTERM the controller gets its own back.
    events = tmp_path / "relay-events.jsonl"
    relay = start_peripheral(
        name="relay", adapter=mirror,
        cmd=f"{gattemu_bin} relay {adv.address} --adapter {{adapter}} --upstream-adapter {upstream} --address device",
        extra_args=["--events", str(events), "--control", "off"])
    await relay.advertising(central, address=adv.address, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    assert await controller_address(mirror) == adv.address
    device.stop()
    lines: list[str] = []
    await noke_flow(central, lines.append)
    await central.disconnect_all()
    assert relay.stop() == 0, relay.tail()
    assert await controller_address(mirror) == mirror_address, "the mirror's controller did not get its own address back"
    log = [json.loads(line) for line in events.read_text().splitlines()]
    assert any(f"from the device's own address {adv.address}" in e.get("detail", "") for e in log), log[:10]
    report(f"relay --address device on {mirror}: mirror at {adv.address}, Noke flow passed, {mirror_address} back on exit")


@pytest.mark.usefixtures("relay_single_att_channel")
async def test_address_own_says_the_mirror_address_differs(central, start_gattemu, start_peripheral, gattemu_bin,
                                                         relay_adapters, needs_separate_stack, tmp_path):
    upstream, mirror, mirror_address = relay_adapters
    device = start_gattemu(NOKE)
    adv = await device.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    events = tmp_path / "relay-events.jsonl"
    relay = start_peripheral(
        name="relay", adapter=mirror,
        cmd=f"{gattemu_bin} relay {adv.address} --adapter {{adapter}} --upstream-adapter {upstream}",
        extra_args=["--events", str(events), "--control", "off"])
    await relay.advertising(central, address=mirror_address, name_prefix="NOKE", service_uuid=NOKE_SERVICE)
    assert relay.stop() == 0, relay.tail()
    notes = [e["detail"] for e in map(json.loads, events.read_text().splitlines())
             if e["event"] == "note" and "own address" in e.get("detail", "")]
    assert len(notes) == 1, notes
    assert f"{mirror}'s own address {mirror_address}, not the device's {adv.address}" in notes[0], notes[0]
    assert "Noke" in notes[0] and "--address device" in notes[0], notes[0]
    # bluetoothd runs with its own main.conf's [GATT] Channels (3 by default here): the relay warns of EATT's reordering;
    # or, where the test gave it Channels = 1 (relay_single_att_channel), says its write commands stay in order.
    channels = [e["detail"] for e in map(json.loads, events.read_text().splitlines())
                if e["event"] == "note" and "ATT channel" in e.get("detail", "")]
    if kernel_has_enhanced_channels():
        assert len(channels) == 1 and "opens one ATT channel per link" in channels[0], channels
    else:
        assert len(channels) == 1 and "up to 3 ATT channels per link" in channels[0] and "out of order" in channels[0], \
            channels
    report(f"relay --address own: one note: {notes[0]}; {channels[0]}")
