"""gattemu serving profiles/leaf-reader.json (WaveLynx LEAF reader, plaintext
scripted handshake, placeholder UUIDs)."""
import os
import secrets

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


def _post(url: str) -> int:
    import urllib.request
    req = urllib.request.Request(url, data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


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
    while True:  # the API comes up with gattemu; retry setup only
        try:
            status = await asyncio.to_thread(_post, f"http://127.0.0.1:{port}/v1/triggers/touch")
            break
        except OSError as e:
            if time.monotonic() > end or not p.running:
                raise AssertionError(f"control API not reachable: {e}; output:\n{p.tail()}")
            await asyncio.sleep(0.5)
    assert status in (200, 201, 202, 204), status
    t0 = time.monotonic()
    touched = await p.advertising(central, timeout=12, service_uuid=LEAF_TOUCH_SERVICE)
    assert touched.address == adv.address
    print(f"touch service advertised {time.monotonic() - t0:.1f} s after the trigger")
    # touchEnd (15 s after the trigger) switches back to the base advertisement
    await asyncio.sleep(max(0.0, 15.5 - (time.monotonic() - t0)))
    await central.wait_gone(service_uuid=LEAF_TOUCH_SERVICE, timeout=20)
    back = await p.advertising(central, name=leaf_name(), service_uuid=LEAF_SERVICE)
    assert LEAF_TOUCH_SERVICE not in back.service_uuids
