"""scripts/bench --channels: bulk data over an L2CAP channel against GATT notifications of the same profile, in the
sandbox VM.

One gattemu (the release build, `GATTEMU_BIN` else .build/release/gattemu) runs a profile with both: a channel `data`
(MTU 2048, its PSM published in Apple's characteristic) whose rule streams N bytes when the central sends 02, and a
notify characteristic `tx` whose rule answers each write of 02 to `rx` with 32 notifications of 512 bytes (an
attribute's most; the central's ATT MTU is 517). One
Bumble central (Tests/e2e/central.py, on $GATTEMU_CENTRAL) subscribes, writes until N bytes of notifications
arrived, then opens the channel (16 credits of 512-byte PDUs, as the e2e tests) and takes the N-byte stream. Each
round does both on one link; the figure judged is the channel's bytes per second as a multiple of the notifications'
(issue #45: CoC should beat notifications clearly; the target here is 2x). channels.md and channels.json.

    python benchmarks/channels_bench.py --out DIR [--bytes N] [--rounds N]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))

SERVICE = "7a1e0001-5c3b-4f6e-9b2a-1d0c9e8f7a60"
TX = "7a1e0002-5c3b-4f6e-9b2a-1d0c9e8f7a60"
RX = "7a1e0003-5c3b-4f6e-9b2a-1d0c9e8f7a60"
PSM_CHARACTERISTIC = "abdd3056-28fa-441d-a470-55a75a52553a"
NAME = "CocBench"
BURST = 32
TARGET = 2.0


def log(message: str) -> None:
    print(f"channels-bench: {message}", flush=True)


def profile(size: int, value_bytes: int) -> dict:
    return {
        "format": 1,
        "device": {"name": NAME},
        "advertisements": [{"localName": NAME, "serviceUUIDs": [SERVICE]}],
        "services": [{"id": "files", "uuid": SERVICE, "characteristics": [
            {"id": "tx", "uuid": TX, "flags": ["notify"], "maxLength": 512},
            {"id": "rx", "uuid": RX, "flags": ["write", "write-without-response"]}]}],
        "channels": [{"id": "data", "psm": "any", "mtu": 2048, "publish": "files"}],
        "rules": [
            {"on": {"sdu": "data", "prefix": "02"}, "do": {"stream": "data", "bytes": size}},
            {"on": {"write": "rx", "prefix": "02"},
             "do": [{"notify": "tx", "value": f"{{fill(170, {value_bytes})}}"}] * BURST},
        ],
    }


async def one_round(size: int, out: Path, number: int) -> dict:
    from bumble import l2cap
    from central import open_central

    central = await open_central(adapter=os.environ["GATTEMU_CENTRAL"])
    try:
        conn = await central.connect((await central.find(name=NAME, timeout=60)).address)
        mtu = conn.mtu
        received: list[int] = []
        news = asyncio.Event()

        def on_notification(value: bytes) -> None:
            received.append(len(value))
            news.set()

        await conn.subscribe(TX, on_notification)
        started = time.monotonic()
        while sum(received) < size:
            before = len(received)
            await conn.write(RX, b"\x02", response=True)
            end = time.monotonic() + 30
            while len(received) < before + BURST:
                news.clear()
                assert time.monotonic() < end, f"round {number}: {len(received) - before} of {BURST} notifications"
                try:
                    await asyncio.wait_for(news.wait(), 5)
                except asyncio.TimeoutError:
                    pass
        notify_seconds = time.monotonic() - started
        notified = sum(received)

        psm = int.from_bytes(await conn.read(PSM_CHARACTERISTIC), "little")
        spec = l2cap.LeCreditBasedChannelSpec(psm=psm, mtu=2048, mps=512, max_credits=16)
        channel = await asyncio.wait_for(conn._conn.create_l2cap_channel(spec=spec), 30)
        sdus: list[int] = []
        done = asyncio.Event()

        def on_sdu(sdu: bytes) -> None:
            sdus.append(len(sdu))
            if sum(sdus) >= size:
                done.set()

        channel.sink = on_sdu
        started = time.monotonic()
        channel.write(b"\x02")
        await asyncio.wait_for(done.wait(), 600)
        channel_seconds = time.monotonic() - started
        await channel.disconnect()
        await conn.disconnect()
    finally:
        await central.close()
    notify_rate, channel_rate = notified / notify_seconds, size / channel_seconds
    return {"mtu": mtu, "notified": notified, "notifications": len(received), "notify_s": round(notify_seconds, 2),
            "notify_Bps": round(notify_rate), "streamed": sum(sdus), "sdus": len(sdus), "channel_s": round(channel_seconds, 2),
            "channel_Bps": round(channel_rate), "ratio": round(channel_rate / notify_rate, 2)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("GATTEMU_OUT", "out/bench")))
    parser.add_argument("--bytes", type=int, default=256 * 1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    binary = Path(os.environ.get("GATTEMU_BIN") or ROOT / ".build" / "release" / "gattemu")
    # The central asks for ATT MTU 517 and BlueZ 5.66 agrees: notifications of 512 bytes, an attribute's most.
    path = args.out / "channels-profile.json"
    path.write_text(json.dumps(profile(args.bytes, 512), indent=2))
    events = args.out / "channels-events.jsonl"
    events.unlink(missing_ok=True)
    with open(args.out / "channels-gattemu.log", "w") as output:
        process = subprocess.Popen([str(binary), "run", str(path), "--adapter", os.environ["GATTEMU_PERIPH"], "--control", "off",
                                    "--events", str(events)], stdout=output, stderr=subprocess.STDOUT)
    rounds = []
    try:
        end = time.monotonic() + 60
        while not (events.exists() and '"event":"advertising"' in events.read_text()):
            if process.poll() is not None or time.monotonic() > end:
                raise SystemExit("channels-bench: gattemu did not start advertising; see channels-gattemu.log")
            time.sleep(0.2)
        for number in range(1, args.rounds + 1):
            figures = asyncio.run(one_round(args.bytes, args.out, number))
            log(f"round {number}: {json.dumps(figures)}")
            rounds.append(figures)
    finally:
        process.terminate()
        process.wait(timeout=30)
    ratio = statistics.median(r["ratio"] for r in rounds)
    result = {"bytes": args.bytes, "burst": BURST, "rounds": rounds, "ratio_median": ratio,
              "ratio_range": [min(r["ratio"] for r in rounds), max(r["ratio"] for r in rounds)], "target": TARGET,
              "met": ratio >= TARGET}
    (args.out / "channels.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# L2CAP channel against GATT notifications (scripts/bench --channels)", "",
        f"{args.bytes} bytes each way per round, one Bumble central, one gattemu profile with both; "
        f"notifications of 512 bytes in bursts of {BURST} per write, the channel in 2048-byte SDUs "
        "(16 credits of 512-byte PDUs).", "",
        "| round | ATT MTU | notifications | B/s | channel SDUs | B/s | channel / notifications |",
        "|---|---|---|---|---|---|---|",
    ]
    for number, r in enumerate(rounds, 1):
        lines.append(f"| {number} | {r['mtu']} | {r['notifications']} in {r['notify_s']} s | {r['notify_Bps']} | "
                     f"{r['sdus']} in {r['channel_s']} s | {r['channel_Bps']} | {r['ratio']} |")
    lines += ["", f"Median channel / notifications: **{ratio}** (range {result['ratio_range'][0]}–{result['ratio_range'][1]}); "
              f"target ≥ {TARGET}: {'met' if result['met'] else 'not met'}.", ""]
    (args.out / "channels.md").write_text("\n".join(lines))
    log(f"median ratio {ratio} (target {TARGET}): {'met' if result['met'] else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
