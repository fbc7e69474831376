"""The client against gattemu-control-fixture: every operation, typed errors carrying the API's error body, the
token found as `gattemu ctl` finds it, the `fault` context manager."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

import gattemu
from gattemu import Client
from gattemu.token import find_token, token_path

ROOT = Path(__file__).resolve().parents[3]


def client_of(server, **kwargs) -> Client:
    return Client(server.url, server.token, **kwargs)


# -- tokens ---------------------------------------------------------------------------------------------------------

def test_token_path_is_the_one_gattemu_run_writes(tmp_path):
    assert token_path(8765, environ={"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "gattemu" / "control-8765.token"
    me = os.geteuid()
    assert token_path(9000, environ={}) == Path(f"/tmp/gattemu-{me}/control-9000.token")
    # A relative XDG_RUNTIME_DIR is ignored, as gattemu does; another user's folder is always /tmp/gattemu-UID.
    assert token_path(1, environ={"XDG_RUNTIME_DIR": "run/user"}) == Path(f"/tmp/gattemu-{me}/control-1.token")
    assert token_path(1, uid=me + 1, environ={"XDG_RUNTIME_DIR": str(tmp_path)}) == Path(f"/tmp/gattemu-{me + 1}/control-1.token")


def make_token_file(runtime: Path, port: int, text: str = "secret\n", folder_mode=0o700, file_mode=0o600) -> Path:
    folder = runtime / "gattemu"
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(folder_mode)
    path = folder / f"control-{port}.token"
    path.write_text(text)
    path.chmod(file_mode)
    return path


def test_find_token_reads_the_first_line_and_refuses_what_others_could_read_or_plant(tmp_path):
    environ = {"XDG_RUNTIME_DIR": str(tmp_path)}
    assert find_token(8765, environ=environ) is None  # no folder: nothing running
    make_token_file(tmp_path, 8765, "abc123\r\nignored\n")
    assert find_token(8765, environ=environ) == "abc123"
    assert find_token(8766, environ=environ) is None  # no file for that port
    make_token_file(tmp_path, 8765, file_mode=0o640)
    with pytest.raises(gattemu.TokenError, match="chmod 600"):
        find_token(8765, environ=environ)
    make_token_file(tmp_path, 8765, folder_mode=0o750)
    with pytest.raises(gattemu.TokenError, match="chmod 700"):
        find_token(8765, environ=environ)
    (tmp_path / "gattemu").chmod(0o700)
    make_token_file(tmp_path, 8765, "\n")
    with pytest.raises(gattemu.TokenError, match="first line"):
        find_token(8765, environ=environ)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "gattemu").symlink_to(tmp_path / "gattemu")
    with pytest.raises(gattemu.TokenError, match="not a folder"):
        find_token(8765, environ={"XDG_RUNTIME_DIR": str(elsewhere)})


def test_the_client_finds_the_token_like_gattemu_ctl(noke, tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    make_token_file(runtime, noke.port, noke.token + "\n")
    # Nothing given: the file gattemu run made for the port.
    assert Client(noke.url, environ={"XDG_RUNTIME_DIR": str(runtime)}).status()["deviceName"]
    # The environment comes first, then the file; an explicit token or token file comes before both.
    wrong = {"XDG_RUNTIME_DIR": str(runtime), "GATTEMU_CONTROL_TOKEN": "wrong"}
    with pytest.raises(gattemu.Unauthorized):
        Client(noke.url, environ=wrong).status()
    assert Client(noke.url, environ={"GATTEMU_TOKEN": noke.token}).status()["deviceName"]
    assert Client(noke.url, token_file=noke.token_file, environ=wrong).status()["deviceName"]
    assert Client(noke.url, noke.token, environ=wrong).status()["deviceName"]
    # Not a loopback URL: no token file is looked for.
    assert Client("http://192.0.2.1:%d" % noke.port, environ={"XDG_RUNTIME_DIR": str(runtime)}).token is None


def test_without_the_token_the_api_error_carries_the_servers_body(noke):
    with pytest.raises(gattemu.Unauthorized) as caught:
        Client(noke.url, "", environ={}).status()
    error = caught.value
    assert error.status == 401 and error.body["status"] == 401 and error.message == error.body["error"]
    assert "getStatus: 401" in str(error)


def test_bad_urls_are_refused():
    for url in ("https://127.0.0.1:8765", "ftp://x", "http://127.0.0.1:8765/v1", "127.0.0.1:8765", "http://h:99999"):
        with pytest.raises(ValueError):
            Client(url, "t")


def test_nothing_listening_is_connection_failed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(gattemu.ConnectionFailed, match=f"127.0.0.1:{port}"):
        Client(f"http://127.0.0.1:{port}", "t", timeout=2).status()


# -- every operation --------------------------------------------------------------------------------------------------

def test_status_events_values_variables_and_reset(noke):
    api = client_of(noke)
    status = api.status()
    assert status["deviceName"].startswith("NOKE") and {s["id"] for s in status["services"]} == {"lock"}
    page = api.events(since=2, limit=2)
    assert [e.seq for e in page["events"]] == [3, 4] and page["latest"] >= 5
    assert isinstance(page["events"][0], gattemu.Event)
    assert api.notify("tx", b"\x51\x60")["characteristic"] == "tx"
    assert api.notify("tx", hex="51 60 0a")
    assert api.set_value("session", utf8="hello")
    assert api.set_value("session", base64="AQI=")
    events = api.events(since=5)["events"]
    assert [(e.kind, e.characteristic, e.value) for e in events if e.kind == "notify"][:2] == \
        [("notify", "tx", b"\x51\x60"), ("notify", "tx", b"\x51\x60\x0a")]
    with pytest.raises(ValueError):
        api.notify("tx", b"\x01", hex="01")
    with pytest.raises(gattemu.Conflict) as caught:
        api.indicate("tx", b"\x01")  # tx has no indicate flag
    assert caught.value.status == 409
    assert api.set_variable("lockState", 0)["name"] == "lockState"
    assert api.set_variable("hardwareCode", "2P")
    with pytest.raises(gattemu.Conflict):
        api.set_variable("lockState", "not a number")
    assert api.fire_trigger("jam") == {"ok": True, "trigger": "jam"}
    assert api.fire_trigger("lock", {"reason": "test"})["trigger"] == "lock"
    assert api.reset() == {"ok": True}


def test_not_found_lists_the_known_names(noke):
    with pytest.raises(gattemu.NotFound) as caught:
        client_of(noke).notify("nope", b"\x01")
    assert {"rx", "tx", "session"} <= set(caught.value.known)
    assert caught.value.body["status"] == 404


def test_faults_add_list_remove_clear_and_the_context_manager(noke):
    api = client_of(noke)
    added = api.add_faults({"on": "write", "characteristic": "rx", "error": "not-authorized", "count": 1})
    assert added["on"] == "write" and added["id"]
    several = api.add_faults([{"on": "notify", "characteristic": "tx", "drop": True, "id": "d1"},
                              {"on": "read", "delay": "10ms", "id": "d2"}])
    assert [f["id"] for f in several["faults"]] == ["d1", "d2"]
    assert {f["id"] for f in api.list_faults()["faults"]} == {added["id"], "d1", "d2"}
    assert api.remove_fault("d1")
    with pytest.raises(gattemu.Conflict):
        api.add_faults({"on": "read", "delay": "10ms", "id": "d2"})  # already installed
    with pytest.raises(gattemu.BadRequest) as caught:
        api.add_faults({"on": "write", "explode": True})
    assert caught.value.body["status"] == 400
    assert api.clear_faults()
    assert api.list_faults()["faults"] == []

    with api.fault(on="notify", characteristic="tx", truncate=1, id="t1") as fault:
        assert fault["id"] == "t1"
        assert [f["id"] for f in api.list_faults()["faults"]] == ["t1"]
    assert api.list_faults()["faults"] == []
    with pytest.raises(RuntimeError):
        with api.fault([{"on": "read", "drop": True}, {"on": "notify", "drop": True}]):
            assert len(api.list_faults()["faults"]) == 2
            raise RuntimeError("the test failed inside the block")
    assert api.list_faults()["faults"] == []  # removed on the way out of a failing block too


def test_centrals_services_pairing_bonds_address_and_advertisement(noke, leaf):
    api = client_of(noke)
    with pytest.raises(gattemu.NotFound):
        api.disconnect("AA:BB:CC:DD:EE:FF")  # not connected
    assert api.set_service("lock", False)["changed"] is True
    assert api.set_service("lock", True)["changed"] is True
    assert "agent" in api.pairing()
    with pytest.raises(gattemu.Conflict):
        api.answer_pairing(1, passkey="123456")  # no prompt waits
    with pytest.raises(ValueError):
        api.answer_pairing(1)
    assert "bonds" in api.bonds()
    for call in (lambda: api.forget_bond("AA:BB:CC:DD:EE:FF"), lambda: api.change_address("random")):
        with pytest.raises(gattemu.ApiError) as caught:
            call()  # a never-started emulator has no adapter
        assert caught.value.status in (404, 409, 503)
    touched = client_of(leaf).set_advertisement("touched")
    assert touched
    assert client_of(leaf).set_advertisement(None)
    with pytest.raises(gattemu.NotFound):
        client_of(leaf).set_advertisement("nope")


def test_document_and_dashboard(noke):
    api = client_of(noke)
    committed = json.loads((ROOT / "Sources" / "Control" / "openapi.json").read_text())
    assert api.openapi() == committed
    assert "<html" in api.dashboard().lower()
    assert api.dashboard_style() and api.dashboard_script() and "function" in api.timeline_script()


def test_raw_returns_refusals_instead_of_raising(noke):
    api = client_of(noke)
    answer = api.raw("POST", "/v1/faults", b"{", headers={"Content-Type": "text/plain"})
    assert answer.status == 415 and answer.json()["status"] == 415
    assert api.raw("GET", "/v1/nothing-here").status == 404


def test_one_device_is_reached_at_its_own_paths_and_under_its_id(noke):
    api = client_of(noke)
    listed = api.devices()["devices"]
    assert [d["id"] for d in listed] == ["noke-lock"] and listed[0]["state"] == "running", listed
    device = api.for_device("noke-lock")
    assert device.status()["profile"] == api.status()["profile"]
    assert device.devices() == api.devices(), "the device list is the process's"
    assert device.events(since=0, limit=3)["events"] == api.events(since=0, limit=3)["events"]
    with pytest.raises(gattemu.NotFound) as refused:
        api.for_device("door").status()
    assert refused.value.body.get("known") == ["noke-lock"]
    with pytest.raises(ValueError):
        api.for_device("")
