"""gattemu survives what a rig sees: bluetoothd restarts and adapter power cycles, with the central
(its own Bumble stack) staying up throughout. 5 rounds each by default, 20 with scripts/test --long."""
import asyncio
import os
import time

import pytest

from central import amgmt
from conftest import LONG, bluetoothd, report
from flows import NOKE_SERVICE, noke_flow

ROUNDS = 20 if LONG else 3
# The bound: the central finds the device again within 2 s of bluetoothd (or the adapter) being
# back. Measured here: at most 0.2 s (registering again takes gattemu well under a second).
BACK_WITHIN = 2.0


def say(line):
    print(f"central: {line}")


async def use_the_lock(central):
    run = await noke_flow(central, say)
    answer = run.responses[-1]
    assert answer[:2] == bytes([0x51, 0x60]) and len(answer) == 20, answer.hex()


async def test_survives_bluetoothd_restarts(central, start_gattemu, needs_separate_stack):
    p = start_gattemu("noke-lock.json")
    await p.advertising(central, service_uuid=NOKE_SERVICE)
    await use_the_lock(central)
    delays = []
    for round in range(ROUNDS):
        bluetoothd("restart")
        back = time.monotonic()
        await central.find(service_uuid=NOKE_SERVICE, timeout=BACK_WITHIN)
        delays.append(time.monotonic() - back)
        await use_the_lock(central)
        assert p.running, "gattemu exited after a bluetoothd restart"
    report(f"bluetoothd restarts {ROUNDS}: the central saw the lock advertising again after "
          f"max {max(delays):.1f} s, mean {sum(delays) / len(delays):.1f} s")
    out = await p.output_when(lambda o: o.count("registered again") >= ROUNDS)
    assert out.count("bluetoothd-lost") == ROUNDS, out[-3000:]
    assert out.count("registered again") == ROUNDS, out[-3000:]


async def test_survives_adapter_power_cycles(central, start_gattemu, needs_separate_stack):
    p = start_gattemu("noke-lock.json")
    await p.advertising(central, service_uuid=NOKE_SERVICE)
    index = os.environ["GATTEMU_PERIPH"].removeprefix("hci")
    delays = []
    for round in range(ROUNDS):
        await amgmt("--index", index, "power", "off")
        await amgmt("--index", index, "power", "on")
        back = time.monotonic()
        await central.find(service_uuid=NOKE_SERVICE, timeout=BACK_WITHIN)
        delays.append(time.monotonic() - back)
        await use_the_lock(central)
        assert p.running, "gattemu exited after a power cycle"
    report(f"power cycles {ROUNDS}: the central saw the lock advertising again after max {max(delays):.1f} s, "
           f"mean {sum(delays) / len(delays):.1f} s")
    out = await p.output_when(lambda o: o.count("adapter powered off") >= ROUNDS)
    assert out.count("adapter powered off") == ROUNDS, out[-3000:]
