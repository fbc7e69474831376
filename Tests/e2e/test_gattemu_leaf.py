"""gattemu serving profiles/leaf-reader.json (WaveLynx LEAF reader, plaintext
scripted handshake, the public credential service and data characteristic UUIDs; the touch service UUID is a
placeholder)."""
import os
import secrets
from pathlib import Path

import gattemu
import pytest

from captures import advertising_reports
from conftest import report
from controlapi import api
from flows import (LEAF_DATA, LEAF_READER_UID, LEAF_SERVICE, LEAF_TOUCH_SERVICE, Inbox, leaf_flow,
                   leaf_frame, leaf_parse)

PROFILE = "leaf-reader.json"


def leaf_name() -> str:
    return "ETHS" + os.environ["GATTEMU_PERIPH_ADDRESS"].replace(":", "").upper()


def say(line):
    print(f"central: {line}")


async def test_leaf_advertisement_without_touch(central, start_gattemu):
    p = start_gattemu(PROFILE)
    adv = await p.advertising(central, name_prefix="ETHS", service_uuid=LEAF_SERVICE)
    assert adv.name == leaf_name()
    assert LEAF_TOUCH_SERVICE not in adv.service_uuids, adv.service_uuids


@pytest.mark.parametrize("mtu", [23, 200, 517])
async def test_leaf_found_by_its_public_uuids_at_mtu(mtu, central, start_gattemu, tmp_path):
    """A central that knows only the public UUIDs (credential service, data characteristic, CCCD 2902) and the
    name prefix finds the reader with a service filter — the credential UUID in the service list (iOS
    scanForPeripherals(withServices:), Android ScanFilter.setServiceUuid) and as service data with the
    reader UID (Android ScanFilter.setServiceData) — then subscribes and completes the flow at this MTU (23: no
    MTU exchange, every write and notification in 20-byte pieces) with a 400-byte credential message, the
    longest LEAF message. The advertisements as the central received them (its own HCI capture, read by
    tshark; once, at MTU 517: the advertisement does not depend on the MTU) carry the credential service data with
    the UID, each within the 31 bytes of legacy advertising."""
    p = start_gattemu(PROFILE)
    capture = Path(os.environ["GATTEMU_OUT"]) / f"central-leaf-scan-{mtu}.btsnoop"
    with central.record(capture, check="later"):
        by_uuid = await p.advertising(central, name_prefix="ETHS", service_uuid=LEAF_SERVICE)
        by_data = await central.find(name_prefix="ETHS", service_data_uuid=LEAF_SERVICE, timeout=30)
    assert by_data.address == by_uuid.address and by_uuid.name == leaf_name()
    assert by_data.service_data[LEAF_SERVICE] == LEAF_READER_UID, by_data.service_data

    reports = advertising_reports(capture, os.environ["GATTEMU_PERIPH_ADDRESS"]) if mtu == 517 else []
    if mtu == 517:
        uuid_hex = LEAF_SERVICE.replace("-", "")
        with_uid = [r for r in reports if 0x21 in r["ad_types"] and LEAF_READER_UID.hex() in r["service_data"]]
        listed = [r for r in reports if 0x07 in r["ad_types"] and uuid_hex in r["uuids_128"]]
        assert with_uid and listed, reports
        assert all(r["uuids_128"] == [uuid_hex] for r in with_uid), with_uid
        assert all(r["length"] <= 31 for r in reports), [r for r in reports if r["length"] > 31]
        assert any(r["type"] == 0x04 and r["name"] == leaf_name() for r in reports), "the name in a scan response"

    run = await leaf_flow(central, say, mtu=0 if mtu == 23 else mtu, credential_bytes=400)
    assert run.mtu == mtu
    assert [leaf_parse(f)["tag"] for f in run.auth] == [3, 2], [f.hex() for f in run.auth]
    assert run.auth_result[:4] == bytes([0x81, 0x00, 0x00, 0x02]) and leaf_parse(run.auth_result)["value"] == b"\x00"
    c = leaf_parse(run.certificate)
    assert len(run.certificate) == 103 and c["tag"] == 5, run.certificate.hex()
    assert c["value"][2:10] == LEAF_READER_UID and c["value"][10:18] == run.duid, c["value"].hex()
    seen = (f"{len(reports)} advertising reports ≤ 31 bytes (max {max(r['length'] for r in reports)})" if reports
            else "advertising reports read at MTU 517")
    report(f"leaf | public UUIDs | MTU {mtu} | found by service UUID and by service data (UID "
           f"{LEAF_READER_UID.hex()}), {seen}, 405-byte credential frame, 103-byte certificate")


async def test_leaf_handshake_and_certificate(central, start_gattemu):
    p = start_gattemu(PROFILE)
    await p.advertising(central, name=leaf_name())
    run = await leaf_flow(central, say)
    auth_rsp, auth_req = (leaf_parse(f) for f in run.auth)
    assert (auth_rsp["start"], auth_rsp["tag"], auth_rsp["length"]) == (0x81, 3, 17), run.auth[0].hex()
    assert (auth_req["start"], auth_req["tag"], auth_req["length"]) == (0x81, 2, 17), run.auth[1].hex()
    assert len(run.auth[0]) == len(run.auth[1]) == 21
    res = leaf_parse(run.auth_result)
    assert run.auth_result[:4] == bytes([0x81, 0x00, 0x00, 0x02]) and res["value"] == b"\x00", \
        run.auth_result.hex()
    cert = run.certificate
    assert len(cert) == 103, cert.hex()
    c = leaf_parse(cert)
    assert (c["start"], c["tag"], c["length"]) == (0x81, 5, 0x63), cert.hex()
    v = c["value"]
    assert v[0] == 98 and v[1] == 1, v.hex()            # length, certificate id
    assert v[2:10] == LEAF_READER_UID, v.hex()
    assert v[10:18] == run.duid, (v.hex(), run.duid.hex())
    assert v[50:98] == bytes(48), v.hex()
    # rotating sequence numbers: consecutive across the reader's frames
    seqs = [leaf_parse(f)["seq"] for f in (*run.auth, run.auth_result, cert)]
    assert all((b - a) % 256 == 1 for a, b in zip(seqs, seqs[1:])), seqs


async def test_leaf_two_writes_and_unauthenticated_credential(central, start_gattemu):
    p = start_gattemu(PROFILE)
    await p.advertising(central, name=leaf_name())
    conn = await central.connect(name=leaf_name())
    try:
        data = Inbox("data", say)
        await conn.subscribe(LEAF_DATA, data)
        # credential before authentication -> response 2 (auth required)
        await conn.write(LEAF_DATA, leaf_frame(4, 0, b"\x00" * 8), response=False)
        r = await data.get()
        assert r[:4] == bytes([0x81, 0, 0, 2]) and r[5:] == b"\x02", r.hex()
        # dUID alone: no answer; then AUTH_REQ: AUTH_RSP + AUTH_REQ
        await conn.write(LEAF_DATA, leaf_frame(1, 1, secrets.token_bytes(8)), response=False)
        await data.expect_none(1.0)
        await conn.write(LEAF_DATA, leaf_frame(2, 2, secrets.token_bytes(16)), response=False)
        a, b = await data.get(), await data.get()
        assert (a[:2], b[:2]) == (b"\x81\x03", b"\x81\x02"), (a.hex(), b.hex())
        # an encrypted frame -> fail (1); garbage -> invalid (3)
        await conn.write(LEAF_DATA, bytes([0xC1, 4, 0, 2, 3, 0]), response=False)
        r = await data.get()
        assert r[:2] == b"\x81\x00" and r[5:] == b"\x01", r.hex()
        await conn.write(LEAF_DATA, b"\x00\x01", response=False)
        r = await data.get()
        assert r[:2] == b"\x81\x00" and r[5:] == b"\x03", r.hex()
    finally:
        await conn.disconnect()


async def test_leaf_touch_advertises_touch_service(central, start_gattemu):
    """The `touch` trigger, fired through the control API, advertises the touch
    service UUID for touchDuration ms; before and after, it is not advertised."""
    import asyncio
    import time
    port = 8771
    p = start_gattemu(PROFILE, "variables.touchDuration=15000", args=["--control", f"127.0.0.1:{port}"])
    adv = await p.advertising(central, name=leaf_name())
    assert LEAF_TOUCH_SERVICE not in adv.service_uuids, adv.service_uuids
    end = time.monotonic() + 30
    while True:  # the API comes up with gattemu (503 until it has started); retry setup only
        try:
            status, answer = await api("POST", "/v1/triggers/touch", {}, port=port)
            if status == 200:
                break
            problem = f"{status} {answer}"
        except gattemu.ConnectionFailed as e:
            problem = str(e)
        if time.monotonic() > end or not p.running:
            raise AssertionError(f"control API not reachable: {problem}; output:\n{p.tail()}")
        await asyncio.sleep(0.5)
    t0 = time.monotonic()
    touched = await p.advertising(central, timeout=12, service_uuid=LEAF_TOUCH_SERVICE)
    assert touched.address == adv.address
    print(f"touch service advertised {time.monotonic() - t0:.1f} s after the trigger")
    # touchEnd (15 s after the trigger) switches back to the base advertisement
    await asyncio.sleep(max(0.0, 15.5 - (time.monotonic() - t0)))
    await central.wait_gone(service_uuid=LEAF_TOUCH_SERVICE, timeout=20)
    back = await p.advertising(central, name=leaf_name(), service_uuid=LEAF_SERVICE)
    assert LEAF_TOUCH_SERVICE not in back.service_uuids
