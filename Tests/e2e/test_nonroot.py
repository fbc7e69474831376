"""gattemu run as an unprivileged user (`nobody`), as docs/security.md recommends: Debian's stock D-Bus policy
for bluetoothd is all it needs — the GATT application, the advertisement, and the pairing agent (RegisterAgent,
RequestDefaultAgent) — and a just-works pairing, an encrypted read and the BLEProof write work as under root."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from conftest import gattemu_ready, report
from controlapi import api
from flows import BLEPROOF_OK, bleproof_config
from test_pairing import read_info, secure_profile

NOBODY = 65534
PORT = 8767
CONFIG = "00002bb2-0000-1000-8000-00805f9b34fb"
STATUS = "00002bb1-0000-1000-8000-00805f9b34fb"


async def test_gattemu_as_nobody_serves_advertises_and_pairs(central, start_peripheral, gattemu_bin, needs_separate_stack):
    home = Path("/tmp/gattemu-nobody")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    os.chown(home, NOBODY, NOBODY)
    home.chmod(0o755)
    binary = home / "gattemu"
    shutil.copy2(gattemu_bin, binary)
    binary.chmod(0o755)
    profile = Path(secure_profile(home, None, "NobodyProof"))  # BLEProof, `info` needs encryption: the agent registers
    profile.chmod(0o644)
    events = home / "events.jsonl"
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    who = subprocess.run(drop + ["id", "-u"], capture_output=True, text=True, timeout=30)
    assert who.stdout.strip() == str(NOBODY), who
    cmd = " ".join(drop + [str(binary), "run", str(profile), "--adapter", "{adapter}", "--events", str(events),
                           "--control", f"127.0.0.1:{PORT}"])
    p = start_peripheral(cmd=cmd, name="NobodyProof")
    p.ready = gattemu_ready
    await p.wait_ready(60)
    owner = subprocess.run(["ps", "-o", "uid=", "-p", str(p.proc.pid)], capture_output=True, text=True).stdout.strip()
    assert owner == str(NOBODY), f"gattemu runs as uid {owner}"
    assert "pairing agent registered" in p.output(), p.tail()

    conn = await central.connect(name="NobodyProof")
    try:
        assert (await read_info(conn)).startswith("refused")
        await conn.pair("KeyboardDisplay")
        assert await read_info(conn) == "read iPhone ABC"
        indications: list[bytes] = []
        await conn.subscribe(STATUS, indications.append, indicate=True)
        await conn.write(CONFIG, bleproof_config("1"), response=True)
        deadline = time.monotonic() + 10
        while not indications and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert indications == [BLEPROOF_OK], indications
    finally:
        await conn.forget_keys()
        _, bonds = await api("GET", "/v1/bonds", port=PORT)
        for bond in bonds.get("bonds", []):
            await api("DELETE", f"/v1/bonds/{bond['central']}", port=PORT)
        await conn.disconnect()
    # The address change needs CAP_NET_ADMIN: refused with the reason, before the adapter is touched.
    code, body = await api("PUT", "/v1/adapter/address", {"address": "random"}, port=PORT)
    assert code == 503 and "CAP_NET_ADMIN" in body.get("error", ""), (code, body)
    _, status = await api("GET", "/v1/status", port=PORT)
    assert status["advertising"]["advertised"] and status["adapter"].get("staticAddress") is None, status
    kinds = [json.loads(line).get("event") for line in events.read_text().splitlines() if line.startswith("{")]
    assert events.stat().st_uid == NOBODY and (events.stat().st_mode & 0o777) == 0o600, "the event log is nobody's, mode 600"
    assert "paired" in kinds and "write" in kinds, kinds
    report(f"non-root: gattemu as uid {NOBODY} (setpriv, no groups) registered its application, advertisement and "
           f"pairing agent with Debian's stock D-Bus policy; just-works pairing, the encrypted read and the BLEProof "
           f"write → indication worked; the address change was refused (needs CAP_NET_ADMIN)")
