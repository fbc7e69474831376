"""The device comes back under a new address (a factory-reset device): through the control API gattemu has the
adapter show resolvable private addresses of a fresh key; the connected central loses its link, finds the device
only under the new address (one that resolves with the key gattemu reported, and with no earlier one), connects and
reads there; when gattemu stops, the adapter shows its own address again."""
from __future__ import annotations

import asyncio

from conftest import report
from controlapi import api, wait_for_api
from test_pairing import bleproof_named

INFO = "00002bb0-0000-1000-8000-00805f9b34fb"
NAME = "Readdressed"


def address_type(adv) -> str:
    """'random' or 'public', from the central's own record of the advertisement (Bumble's Address)."""
    kind = getattr(adv.raw, "address_type", None)
    return {0: "public", 1: "random"}.get(kind, f"unknown ({kind!r})")


def resolves(adv, irk_hex: str) -> bool:
    """Whether the advertiser's address is a resolvable private address made from `irk_hex` (Core Vol 6 Part B
    1.3.2.2: hash = ah(IRK, prand)); Bumble's Address bytes are least significant first: hash, then prand."""
    from bumble import crypto
    raw = bytes(adv.raw)
    return len(raw) == 6 and raw[5] >> 6 == 0b01 and crypto.ah(bytes.fromhex(irk_hex), raw[3:6]) == raw[0:3]


async def test_the_central_finds_the_device_under_its_new_address(central, start_gattemu, tmp_path, needs_separate_stack):
    profile = bleproof_named(tmp_path, NAME)
    p = start_gattemu(profile, args=["--control", "127.0.0.1:8765"])
    status = await wait_for_api(p)
    assert status["adapter"].get("privateAddresses") is None, status["adapter"]
    first = await p.advertising(central, name=NAME)
    assert address_type(first) == "public", address_type(first)
    conn = await central.connect(name=NAME)
    assert await conn.read(INFO) == b"iPhone ABC"
    steps = [f"found at {first.address} ({address_type(first)}), read"]

    keys = []
    seen = [first.address]
    for change in (1, 2):
        code, body = await api("PUT", "/v1/adapter/address", {"address": "random"})
        assert code == 200, f"{body}\n{p.tail()}"
        assert body["identity"] == first.address and body["changes"] == change and len(body["irk"]) == 32, body
        keys.append(body["irk"])
        if conn is not None:
            # The adapter was powered off for the change: the central's link is gone.
            for _ in range(100):
                if not conn.is_connected:
                    break
                await asyncio.sleep(0.1)
            assert not conn.is_connected, "the central is still connected after the address change"
            conn = None
        moved = await p.advertising(central, name=NAME, timeout=30)
        assert moved.address not in seen, f"still advertised from an earlier address {moved.address} ({seen})"
        assert address_type(moved) == "random", address_type(moved)
        assert resolves(moved, body["irk"]), f"{moved.address} does not resolve with the key gattemu reported"
        assert not any(resolves(moved, key) for key in keys[:-1]), f"{moved.address} resolves with an earlier key"
        seen.append(moved.address)
        await central.wait_gone(address=seen[-2], timeout=20)
        moved_conn = await central.connect(address=moved.address)
        try:
            assert await moved_conn.read(INFO) == b"iPhone ABC"
        finally:
            await moved_conn.disconnect()
        steps.append(f"PUT /v1/adapter/address → found only at {moved.address} (resolvable, key {body['irk'][:8]}…), connected and read")
    code, status = await api("GET", "/v1/status")
    assert status["adapter"]["privateAddresses"] is True, status["adapter"]

    # gattemu stops and gives the adapter its own address back: the next run is at the public address.
    assert p.stop() == 0, p.tail()
    assert f"centrals now find the device at its own address {first.address}" in p.output(), p.tail()
    # The keys went back in the answers only: whoever reads the log cannot follow the device.
    assert not any(key in p.output() for key in keys), "an IRK is in gattemu's log"
    again = start_gattemu(profile, args=["--control", "127.0.0.1:8765"])
    await wait_for_api(again)
    back = await again.advertising(central, name=NAME, timeout=30)
    assert back.address == first.address and address_type(back) == "public", (back.address, address_type(back))
    steps.append(f"gattemu stopped: back at {back.address}")
    report("address change | " + " → ".join(steps))
