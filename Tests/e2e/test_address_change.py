"""The device comes back under a new address (a factory-reset device with a new random static address): gattemu
changes the adapter's static address through the control API, the connected central loses its link, finds the
device only under the new address and reads from it there; when gattemu stops, the adapter has its own address
back."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conftest import report
from controlapi import api, wait_for_api

INFO = "00002bb0-0000-1000-8000-00805f9b34fb"
NAME = "Readdressed"


def renamed_profile(tmp_path: Path) -> str:
    root = Path(__file__).resolve().parents[2]
    profile = json.loads((root / "profiles" / "bleproof.json").read_text())
    profile.pop("$schema", None)
    profile["device"]["name"] = profile["advertisements"][0]["localName"] = NAME
    path = tmp_path / "readdressed.json"
    path.write_text(json.dumps(profile))
    return str(path)


def address_type(adv) -> str:
    """'random' or 'public', from the central's own record of the advertisement (Bumble's Address)."""
    kind = getattr(adv.raw, "address_type", None)
    return {0: "public", 1: "random"}.get(kind, f"unknown ({kind!r})")


async def test_the_central_finds_the_device_under_its_new_address(central, start_gattemu, tmp_path, needs_separate_stack):
    profile = renamed_profile(tmp_path)
    p = start_gattemu(profile, args=["--control", "127.0.0.1:8765"])
    status = await wait_for_api(p, timeout=60)
    assert status["adapter"].get("staticAddress") is None, status["adapter"]
    first = await p.advertising(central, name=NAME)
    conn = await central.connect(name=NAME)
    assert await conn.read(INFO) == b"iPhone ABC"
    steps = [f"found at {first.address} ({address_type(first)}), read"]

    code, body = await api("PUT", "/v1/adapter/address", {"address": "random"})
    assert code == 200, f"{body}\n{p.tail()}"
    new = body["address"]
    assert body["previous"] == first.address and body["randomStatic"] and new != first.address, body
    assert int(new[:2], 16) >> 6 == 0b11, f"{new} is not a random static address"
    # The adapter was powered off for the change: the central's link is gone.
    for _ in range(100):
        if not conn.is_connected:
            break
        await asyncio.sleep(0.1)
    assert not conn.is_connected, "the central is still connected after the address change"
    steps.append(f"PUT /v1/adapter/address → {new}, the central's link dropped")

    moved = await p.advertising(central, name=NAME, timeout=30)
    assert moved.address == new, f"advertised from {moved.address}, expected {new}"
    assert address_type(moved) == "random", address_type(moved)
    await central.wait_gone(address=first.address, timeout=20)
    conn = await central.connect(address=new)
    try:
        assert await conn.read(INFO) == b"iPhone ABC"
    finally:
        await conn.disconnect()
    code, status = await api("GET", "/v1/status")
    assert status["adapter"]["staticAddress"] == new, status["adapter"]
    steps.append(f"found only at {new} (random), connected and read")

    # A chosen address; then gattemu stops and gives the adapter its own address back.
    code, body = await api("PUT", "/v1/adapter/address", {"address": "C0:11:22:33:44:55"})
    assert code == 200 and body["address"] == "C0:11:22:33:44:55" and body["previous"] == new, body
    assert (await p.advertising(central, name=NAME, timeout=30)).address == "C0:11:22:33:44:55"
    steps.append("PUT C0:11:22:33:44:55 → found there")
    assert p.stop() == 0, p.tail()
    assert f"centrals now find the device at {first.address} (its public address)" in p.output(), p.tail()

    again = start_gattemu(profile, args=["--control", "127.0.0.1:8765"])
    await wait_for_api(again, timeout=60)
    back = await again.advertising(central, name=NAME, timeout=30)
    assert back.address == first.address, f"after a restart advertised from {back.address}, expected {first.address}"
    steps.append(f"gattemu stopped: back at {back.address}")
    report("address change | " + " → ".join(steps))
