"""The BLEProof and Noke behaviour the Python peers implement, written out by
hand from profiles/bleproof.json and profiles/noke-lock.json (what gattemu runs
from JSON), plus the bench-only burst rule of benchmarks/profiles/*-burst.json.

Kept free of any BLE library so that every peer answers with the same bytes.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal

BURST = 250          # notifications per burst write (same as the bench profiles)
BURST_OPCODE = 0xB0  # a 2-byte write B0 xx to rx asks for BURST notifications

NOKE = {
    "service": "1bc50001-0200-d29e-e511-446c609db825",
    "rx": "1bc50002-0200-d29e-e511-446c609db825",
    "tx": "1bc50003-0200-d29e-e511-446c609db825",
    "session": "1bc50004-0200-d29e-e511-446c609db825",
}
BLEPROOF = {
    "service": "000018aa-0000-1000-8000-00805f9b34fb",
    "info": "00002bb0-0000-1000-8000-00805f9b34fb",
    "config": "00002bb2-0000-1000-8000-00805f9b34fb",
    "status": "00002bb1-0000-1000-8000-00805f9b34fb",
}

HARDWARE_CODE = "3E"
BATTERY_MV = 2820
LOCK_LOCKED = 2


def noke_name(address: str) -> str:
    return f"NOKE{HARDWARE_CODE}_{address.replace(':', '').upper()}"


def noke_manufacturer_data(lock_state: int = LOCK_LOCKED) -> bytes:
    # [lockState << 5][fw major][fw minor][auto-unlock u16le], company 0xFFFF
    return bytes([lock_state * 32 & 0xFF, 2, 10, 0, 0])


def noke_session() -> bytes:
    return os.urandom(2) + BATTERY_MV.to_bytes(2, "little") + os.urandom(16)


def noke_answer(value: bytes) -> list[bytes]:
    """Notifications for one write to rx (result "success", no server packet)."""
    if len(value) == 20:
        return [bytes([0x51, 0x60, value[2]]) + bytes(17)]
    if len(value) == 2 and value[0] == BURST_OPCODE:
        return [bytes([0x50, value[1]]) + bytes(18)] * BURST
    return [bytes([0x51, 0x62]) + bytes(18)]


BLEPROOF_OK = b'<{"action":"bleconfig","result":"ok"}>'
BLEPROOF_NG = b'<{"action":"bleconfig","result":"ng"}>'


def bleproof_answer(value: bytes) -> bytes:
    """Indication for one write to config."""
    text = value.decode("utf-8", "replace").replace("<", "", 1).replace(">", "", 1)
    try:
        ok = json.loads(text).get("password") == "1"
    except (ValueError, AttributeError):
        ok = False
    return BLEPROOF_OK if ok else BLEPROOF_NG


async def serve_until_signal(stop_serving) -> None:
    """Say "ready" (the bench waits for it), run until SIGINT or SIGTERM, then await
    `stop_serving()` for at most 5 s; a peer that fails to stop cleanly is not an error here."""
    print("ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    try:
        await asyncio.wait_for(stop_serving(), 5)
    except Exception:  # noqa: BLE001
        pass
