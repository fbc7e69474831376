"""The relay tests' ground truth (issue 29), without the relay: the shipped profiles each give the test central a
byte transcript that two runs reproduce exactly. "Byte-identical through the relay" compares a relayed run with these.
"""
from __future__ import annotations

import pytest

from conftest import report
from flows import FLOWS, Step, quiet, transcript_diff

SEED = 7  # gattemu's --seed and the flows' seed for the shipped profiles


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
