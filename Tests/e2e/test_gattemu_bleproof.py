"""gattemu serving profiles/bleproof.json (BLEProof, service 18AA)."""
from flows import (BLEPROOF_NG, BLEPROOF_OK, BLEPROOF_SERVICE, bleproof_config, bleproof_flow)

PROFILE = "bleproof.json"


def say(line):
    print(f"central: {line}")


async def test_bleproof_advertisement(central, start_gattemu):
    p = start_gattemu(PROFILE)
    adv = await p.advertising(central, name="BLEProof")
    assert BLEPROOF_SERVICE in adv.service_uuids, adv.service_uuids


async def test_bleproof_password_ok_ng_and_invalid_json(central, start_gattemu):
    p = start_gattemu(PROFILE)
    await p.advertising(central, name="BLEProof")
    good = bleproof_config("1")
    assert len(good) == 140
    run = await bleproof_flow(central, say, writes=[good, bleproof_config("2"), b"<{not json>",
                                                    good])
    assert run.mtu >= 143, run.mtu
    assert run.info == b"iPhone ABC"
    assert run.indications == [BLEPROOF_OK, BLEPROOF_NG, BLEPROOF_NG, BLEPROOF_OK]
    assert len(BLEPROOF_NG) == 38
