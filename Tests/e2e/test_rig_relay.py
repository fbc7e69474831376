"""A rig whose devices are a relayed real device and an emulated one (`gattemu run --rig FILE` with a `relay` entry):
the relay connects to its device first, then its mirror serves beside the emulated reader in the one process, with
the one event log and control API. A phone runs the lock's app flow through the mirror while another runs the
reader's flow; both answer as they would alone; the relay's legs are logged under the lock's id; a fault on the lock
through `/v1/devices/lock/` drops its phone while the reader answers on; SIGTERM ends both and writes the relay's
session (`output`).

Needs six controllers besides hci0 (GATTEMU_CONTROLLERS=7; `scripts/test --long` and `--full` boot them): the real
lock on GATTEMU_PERIPH, the relay's upstream on GATTEMU_CENTRAL2 and mirror on GATTEMU_CENTRAL3, the reader on
GATTEMU_CENTRAL5, the phones on GATTEMU_CENTRAL (the test central) and GATTEMU_CENTRAL4. With fewer, conftest leaves
it out of the run and says so in the summary (the default run's relay tests drive the same per-device attach through
`gattemu relay`)."""
from __future__ import annotations

import asyncio
import json
import os
import shlex

import pytest

from central import open_central
from conftest import profile_path
from flows import LEAF_READER_UID, NOKE_SERVICE, leaf_flow, leaf_parse, noke_flow
from test_rig import lock_drops_while_reader_answers, settled

pytestmark = pytest.mark.needs_controllers(7)


@pytest.mark.usefixtures("relay_single_att_channel")
async def test_a_rig_serves_a_relayed_device_beside_an_emulated_one(central, start_gattemu, start_peripheral, gattemu_bin,
                                                                   tmp_path, needs_separate_stack):
    names = ("GATTEMU_CENTRAL2", "GATTEMU_CENTRAL3", "GATTEMU_CENTRAL4", "GATTEMU_CENTRAL5")
    upstream, mirror, phone2_adapter, reader_adapter = (os.environ[n] for n in names)
    mirror_address = os.environ["GATTEMU_CENTRAL3_ADDRESS"].upper()

    device = start_gattemu("noke-lock.json", args=["--control", "off"], name="device")
    adv = await device.advertising(central, name_prefix="NOKE", service_uuid=NOKE_SERVICE)

    session = tmp_path / "lock-session.json"
    rig = tmp_path / "rig.json"
    rig.write_text(json.dumps({"devices": [
        {"id": "lock", "adapter": mirror, "relay": {"device": adv.address, "upstreamAdapter": upstream,
                                                    "output": session.name}},
        {"id": "reader", "profile": profile_path("leaf-reader.json"), "adapter": reader_adapter},
    ]}))
    events = tmp_path / "rig-events.jsonl"
    cmd = " ".join([shlex.quote(gattemu_bin), "run", "--rig", shlex.quote(str(rig)), "--events", shlex.quote(str(events))])
    p = start_peripheral(name="rig", cmd=cmd)
    listed = await settled(p, timeout=150)
    by_id = {d["id"]: d for d in listed["devices"]}
    assert list(by_id) == ["lock", "reader"], listed
    assert all(d["state"] == "running" for d in by_id.values()), listed
    assert by_id["lock"]["adapterName"] == mirror and by_id["reader"]["adapterName"] == reader_adapter, listed

    phone2 = await open_central(adapter=phone2_adapter, address="F0:E0:D0:00:00:04")
    try:
        # The lock's app through the mirror (found by the mirror's address: the device advertises alike) while the
        # reader's app talks to the emulated reader.
        mirrored = await p.advertising(central, address=mirror_address, timeout=120, name_prefix="NOKE",
                                       service_uuid=NOKE_SERVICE)
        assert mirrored.name == adv.name, (mirrored, adv)
        noke, leaf = await asyncio.gather(
            noke_flow(central, lambda line: print(f"lock phone: {line}"), address=mirror_address),
            leaf_flow(phone2, lambda line: print(f"reader phone: {line}")))
        assert [r[:2] for r in noke.responses] == [b"\x51\x60"], [r.hex() for r in noke.responses]
        assert [leaf_parse(f)["tag"] for f in leaf.auth] == [3, 2], [f.hex() for f in leaf.auth]
        assert leaf_parse(leaf.certificate)["value"][2:10] == LEAF_READER_UID, leaf.certificate.hex()

        # A fault on the relayed lock, through its device path: its phone is dropped; the reader answers on.
        await lock_drops_while_reader_answers(central, phone2, "lock", "reader", lock_address=mirror_address)
    finally:
        await phone2.close()

    assert p.stop() == 0, p.tail()
    lines = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    of = {name: [e for e in lines if e.get("device") == name] for name in by_id}
    relayed = [e for e in of["lock"] if e["event"] == "relayed"]
    assert any("device answered the write" in e.get("detail", "") or "write command sent" in e.get("detail", "")
               for e in relayed), relayed[:5]
    assert not any(e["event"] == "relayed" for e in of["reader"]), "the reader is emulated: nothing of it is relayed"
    assert any(e["event"] == "note" and "mirrored on" in e.get("detail", "") for e in of["lock"]), "the relay's notes name the lock"
    assert {e["central"] for e in of["reader"] if e["event"] == "write"} == {os.environ["GATTEMU_CENTRAL4_ADDRESS"].upper()}
    assert [e["event"] for e in of["lock"]].count("stopped") == 1 and [e["event"] for e in of["reader"]].count("stopped") == 1
    # The relay wrote its session, as `gattemu relay -o` does.
    recorded = json.loads(session.read_text())
    assert recorded["services"], recorded
    device.stop()
