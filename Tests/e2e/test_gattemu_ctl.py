"""`gattemu ctl`, the control API's command-line client, against a running `gattemu run`: every command's
text and `--json` output, what it changed on the server (read back through the API), the bearer token,
and one-line errors with exit 1 (refused, unreachable) or 2 (bad command line).
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest

import test_gattemu_faults
from controlapi import token_path
from test_gattemu_faults import API, PORT, api, start_gattemu, wait_for_api


@pytest.fixture(autouse=True)
def _built(gattemu_bin):
    """The binary under test for ctl and for start_gattemu (test_gattemu_faults reads its own global, which its
    autouse fixture sets only for its own tests: without this, a shard that runs no faults test first has none)."""
    test_gattemu_faults.GATTEMU = gattemu_bin


def ctl(*args: str, token: str | None = None, control: str = API) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.pop("GATTEMU_TOKEN", None)
    if token is not None:
        environment["GATTEMU_TOKEN"] = token
    return subprocess.run([str(test_gattemu_faults.GATTEMU), "ctl", *args, "--control", control], capture_output=True, text=True,
                          timeout=60, env=environment, stdin=subprocess.DEVNULL)


def ok(*args: str, **options) -> str:
    done = ctl(*args, **options)
    assert done.returncode == 0 and done.stderr == "", (args, done.returncode, done.stdout, done.stderr)
    return done.stdout


def refused(code: int, *args: str, **options) -> str:
    """Runs a command that must fail with exit `code` and nothing on stdout; returns the first line of stderr,
    the only one for runtime failures (ArgumentParser follows a bad command line with the usage)."""
    done = ctl(*args, **options)
    assert done.returncode == code and done.stdout == "", (args, done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 or code == 2, (args, done.stderr)
    return lines[0]


async def test_every_ctl_command_changes_the_server_and_prints_what_it_did(start_peripheral, tmp_path):
    p = start_gattemu(start_peripheral, "noke-lock.json")
    await wait_for_api(p)
    # No token given: gattemu made one in a file only its user can read, said where it is, printed the dashboard's
    # address without it (the output is a file here, not a terminal: a journal or a CI log could be read by others),
    # kept it out of the event log, and ctl (every command below, no --token) finds it by itself.
    made = token_path(PORT)
    secret = made.read_text().strip()
    assert len(secret) == 64 and (made.stat().st_mode & 0o777) == 0o600 and (made.parent.stat().st_mode & 0o777) == 0o700
    assert f"control API token in {made}" in p.output() and f"dashboard: http://127.0.0.1:{PORT}/ " in p.output(), p.tail()
    assert secret not in p.output(), "the token is in gattemu's output"
    _, logged = await api("GET", "/v1/events?since=0&limit=10000")
    assert secret not in json.dumps(logged)

    def run(*args: str) -> str:
        return ok(*args)

    text = await asyncio.to_thread(run, "status")
    assert text.startswith("profile     ") and text.splitlines()[0].endswith("noke-lock.json"), text
    assert "advertising on" in text and "faults      none" in text, text
    status = json.loads(await asyncio.to_thread(run, "status", "--json"))
    _, server = await api("GET", "/v1/status")
    assert status["profile"] == server["profile"] and status["advertising"]["advertised"] is True

    # Faults: built from options, from --spec, from --file; listed, removed by id, cleared.
    text = await asyncio.to_thread(run, "fault", "add", "--char", "rx", "--error", "not-authorized", "--count", "1",
                                   "--id", "deny-once")
    assert text.startswith("added deny-once: on write rx") and "×1" in text, text
    text = await asyncio.to_thread(run, "fault", "add", "--spec", '{"on": "notify", "characteristic": "tx", "drop": true}')
    assert text.startswith("added ") and "on notify tx" in text, text
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"faults": [{"id": "slow", "on": "read", "delay": "10ms"},
                                               {"id": "flip", "on": "notify", "corrupt": {"flipBits": 1}, "seed": 18446744073709551615}]}))
    text = await asyncio.to_thread(run, "fault", "add", "--file", str(scenario))
    assert [line.split(":")[0] for line in text.splitlines()] == ["added slow", "added flip"], text
    assert "seed 18446744073709551615" in text, text  # a UInt64 seed survives the round trip
    _, faults = await api("GET", "/v1/faults")
    assert {"deny-once", "slow", "flip"} < {f["id"] for f in faults["faults"]} and len(faults["faults"]) == 4, faults
    listed = json.loads(await asyncio.to_thread(run, "fault", "list", "--json"))
    assert listed == faults
    text = await asyncio.to_thread(run, "fault", "list")
    assert len(text.splitlines()) == 4 and "deny-once: on write rx" in text, text
    assert (await asyncio.to_thread(run, "fault", "remove", "deny-once")).strip() == "removed deny-once"
    assert (await asyncio.to_thread(run, "fault", "clear")).strip() == "removed 3 fault(s)"
    _, faults = await api("GET", "/v1/faults")
    assert faults["faults"] == []

    # Values, notifications, triggers, the advertisement, reset.
    assert (await asyncio.to_thread(run, "set-value", "session", "--hex", "0a0b0c")).strip() == "set session"
    answer = json.loads(await asyncio.to_thread(run, "notify", "tx", "--utf8", "hi", "--json"))
    assert answer == {"characteristic": "tx", "hex": "6869", "ok": True}, answer
    assert (await asyncio.to_thread(run, "trigger", "jam")).strip() == "fired jam"
    _, status = await api("GET", "/v1/status")
    assert status["state"]["lockState"] == "3", status["state"]
    assert (await asyncio.to_thread(run, "advertise", "--base")).strip() == "advertising (base)"
    assert (await asyncio.to_thread(run, "reset")).strip() == "reset"
    _, status = await api("GET", "/v1/status")
    assert status["state"]["lockState"] != "3", status["state"]

    # The log: text lines and JSON lines for the same events, in order.
    text = (await asyncio.to_thread(run, "events")).splitlines()
    lines = (await asyncio.to_thread(run, "events", "--json")).splitlines()
    events = [json.loads(line) for line in lines]
    assert len(events) >= len(text) > 0 and [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    first = text[0].split()
    assert first[0] == str(events[0]["seq"]) and first[2] == "ms" and first[3] == events[0]["event"], (text[0], events[0])
    assert any(e["event"] == "note" and e.get("detail") == "control: notify" for e in events), events
    since = events[-2]["seq"]
    later = [json.loads(line) for line in (await asyncio.to_thread(run, "events", "--json", "--since", str(since))).splitlines()]
    assert later and all(e["seq"] > since for e in later)

    # Refusals: the server's message on one line, exit 1.
    assert (await asyncio.to_thread(refused, 1, "notify", "nope", "--hex", "01")).startswith("gattemu: 404 ")
    # A well-formed request the profile cannot honour is a conflict with the profile (409), not a bad request.
    line = await asyncio.to_thread(refused, 1, "indicate", "tx", "--base64", "AQI=")
    assert line == 'gattemu: 409 characteristic "tx" has no indicate flag', line
    assert (await asyncio.to_thread(refused, 1, "trigger", "no such trigger")).startswith("gattemu: 404 ")
    assert (await asyncio.to_thread(refused, 1, "fault", "add", "--error", "teapot")).startswith("gattemu: 400 ")
    assert (await asyncio.to_thread(refused, 1, "disconnect", "AA:BB:CC:DD:EE:FF")).startswith("gattemu: 404 ")
    assert (await asyncio.to_thread(refused, 1, "fault", "remove", "a/b c")).startswith("gattemu: 404 ")
    # Bad command lines: exit 2.
    assert "exactly one of" in await asyncio.to_thread(refused, 2, "notify", "tx", "--hex", "01", "--utf8", "x")
    assert "not valid JSON" in await asyncio.to_thread(refused, 2, "fault", "add", "--spec", "{oops")
    assert "plain HTTP" in await asyncio.to_thread(refused, 2, "status", control="https://127.0.0.1:8765")
    assert "expected a URL" in await asyncio.to_thread(refused, 2, "status", control="127.0.0.1:8765")
    assert p.running, p.output()


async def test_ctl_sends_the_token_and_reports_an_unreachable_server(start_peripheral):
    p = start_gattemu(start_peripheral, "noke-lock.json", extra="--control-token s3cret")
    for _ in range(100):
        assert p.running, p.output()
        if ctl("status", token="s3cret").returncode == 0:
            break
        await asyncio.sleep(0.3)
    assert "advertising on" in ok("status", token="s3cret")
    assert refused(1, "status").startswith("gattemu: 401 ")
    assert refused(1, "status", token="wrong").startswith("gattemu: 401 ")
    line = refused(1, "status", control="http://127.0.0.1:1")
    assert line == "gattemu: cannot reach the control API at http://127.0.0.1:1: connection refused", line
    assert p.running, p.output()
