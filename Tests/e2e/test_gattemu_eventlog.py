"""gattemu's event log against what the real central saw, operation for
operation, and the same log read live three ways: the `--events` JSON-lines
file (flushed on SIGTERM), the control API's Server-Sent Events stream and
`gattemu ctl events --follow --json`.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import threading

import pytest

from conftest import profile_path, report
from controlapi import client
from flows import FLOWS, quiet
from recording import RecordingCentral, log_operations, read_events
from test_gattemu_faults import API, PORT, wait_for_api


class SSEReader(threading.Thread):
    """Reads /v1/events/stream (the Python client's stream_events) until the server closes it; `events` are the
    parsed `data:` payloads, `ids` the `id:` fields."""

    def __init__(self):
        super().__init__(daemon=True)
        self.events: list[dict] = []
        self.ids: list[int] = []
        self.error: Exception | None = None

    def run(self):
        try:
            for event in client(PORT).stream_events(since=0, reconnect=False, read_timeout=120):
                self.ids.append(int(event.stream_id))
                self.events.append(event)
        except Exception as error:  # noqa: BLE001 - reported by the test
            self.error = error


@pytest.mark.parametrize("device", ["noke", "bleproof", "leaf"])
async def test_event_log_matches_what_the_central_saw(central, start_gattemu, gattemu_bin, env, tmp_path, device):
    profile, flow = FLOWS[device]
    events_file = tmp_path / "events.jsonl"
    p = start_gattemu(profile, args=["--events", str(events_file), "--control", f"127.0.0.1:{PORT}"])
    await wait_for_api(p)

    sse = SSEReader()
    sse.start()
    follow = subprocess.Popen([gattemu_bin, "ctl", "events", "--follow", "--json", "--control", API],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        recorder = RecordingCentral(central, profile_path(profile))
        await flow(recorder, quiet)
        await asyncio.sleep(2)  # let the disconnection reach the log
    finally:
        assert p.stop() == 0, p.tail()
        try:
            follow_out, follow_err = follow.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            follow.kill()
            follow_out, follow_err = follow.communicate()
        sse.join(30)

    logged = read_events(str(events_file))
    seqs = [e["seq"] for e in logged]
    assert seqs == list(range(1, len(seqs) + 1)), "gaps in the event file"
    assert logged[-1]["event"] == "stopped", "the file was not flushed to the end on SIGTERM"

    # Operation for operation: the central's record and the log's.
    me = env["GATTEMU_CENTRAL_ADDRESS"]
    seen_by_log = log_operations(logged, me)
    assert seen_by_log == recorder.ops, (
        "event log and central differ:\n  central: " + "\n           ".join(map(str, recorder.ops))
        + "\n  log:     " + "\n           ".join(map(str, seen_by_log)))
    mtus = [int(e["detail"]) for e in logged if e["event"] == "mtu" and e.get("central") == me]
    assert mtus == recorder.mtus, (mtus, recorder.mtus)
    indications = sum(1 for op in recorder.ops if op[0] == "indicate")
    assert sum(1 for e in logged if e["event"] == "confirmed") == indications
    report(f"event log ({device}): {len(recorder.ops)} central operations matched, {len(logged)} events")

    # The SSE stream and `ctl events --follow` carried the same events, live, up to the shutdown.
    assert sse.error is None, sse.error
    assert sse.ids == [e["seq"] for e in sse.events]
    follow_events = [json.loads(line) for line in follow_out.decode().splitlines() if line.strip()]
    last_central_seq = max(e["seq"] for e in logged if e.get("central") == me)
    for name, streamed in (("SSE", sse.events), ("ctl events --follow", follow_events)):
        assert streamed == logged[:len(streamed)], f"{name} differs from the event file"
        assert len(streamed) >= last_central_seq, (
            f"{name} stopped at seq {len(streamed)}, before the central's last event ({last_central_seq}); "
            f"stderr: {follow_err.decode()[-500:]}")
    assert follow.returncode == 0, follow_err.decode()
