"""BLEProof / Noke peer on bless (pip install bless; BlueZ D-Bus via dbus-next).

    python bless_peer.py --profile noke|bleproof --adapter hciN

Notifies and indicates through PropertiesChanged (bless has no AcquireNotify).
Prints "ready" once the advertisement is registered.
"""
from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import behaviour as B  # noqa: E402

from bless import BlessServer  # noqa: E402
from bless.backends.characteristic import GATTCharacteristicProperties as P  # noqa: E402
from bless.backends.attribute import GATTAttributePermissions as A  # noqa: E402


def adapter_address(adapter: str) -> str:
    out = subprocess.run(["cat", f"/sys/class/bluetooth/{adapter}/address"], capture_output=True, text=True)
    return out.stdout.strip() or "00:00:00:00:00:00"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", choices=["noke", "bleproof"], required=True)
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--address", default=None)
    a = ap.parse_args()
    loop = asyncio.get_running_loop()

    if a.profile == "noke":
        name = B.noke_name(a.address or adapter_address(a.adapter))
        svc = B.NOKE["service"]
        # bless puts only the first service UUID in its advertisement; add the
        # manufacturer data the Noke profile advertises.
        from dbus_next.signature import Variant
        from bless.backends.bluezdbus.dbus import advertisement as adv_mod
        orig_init = adv_mod.BlueZLEAdvertisement.__init__

        def init(self, *args, **kw):
            orig_init(self, *args, **kw)
            self._manufacturer_data = {0xFFFF: Variant("ay", B.noke_manufacturer_data())}
        adv_mod.BlueZLEAdvertisement.__init__ = init
        gatt = {svc: {
            B.NOKE["rx"]: {"Properties": P.write | P.write_without_response, "Permissions": A.writeable, "Value": None},
            B.NOKE["tx"]: {"Properties": P.read | P.notify, "Permissions": A.readable, "Value": bytearray(20)},
            B.NOKE["session"]: {"Properties": P.read, "Permissions": A.readable, "Value": bytearray(B.noke_session())},
        }}
    else:
        name = "BLEProof"
        svc = B.BLEPROOF["service"]
        gatt = {svc: {
            B.BLEPROOF["info"]: {"Properties": P.read, "Permissions": A.readable, "Value": bytearray(b"iPhone ABC")},
            B.BLEPROOF["config"]: {"Properties": P.write, "Permissions": A.writeable, "Value": None},
            B.BLEPROOF["status"]: {"Properties": P.indicate, "Permissions": A.readable, "Value": bytearray(b"iPhone CBA")},
        }}

    server = BlessServer(name=name, loop=loop, adapter=a.adapter)

    def read(characteristic, **_kw):
        return characteristic.value

    def notify(uuid: str, value: bytes) -> None:
        server.get_characteristic(uuid).value = bytearray(value)
        server.update_value(svc, uuid)

    def write(characteristic, value, **_kw):
        uuid = str(characteristic.uuid).lower()
        if a.profile == "noke" and uuid == B.NOKE["rx"]:
            for v in B.noke_answer(bytes(value)):
                notify(B.NOKE["tx"], v)
        elif a.profile == "bleproof" and uuid == B.BLEPROOF["config"]:
            notify(B.BLEPROOF["status"], B.bleproof_answer(bytes(value)))

    server.read_request_func = read
    server.write_request_func = write
    await server.add_gatt(gatt)
    await server.start()
    await B.serve_until_signal(server.stop)


if __name__ == "__main__":
    asyncio.run(main())
