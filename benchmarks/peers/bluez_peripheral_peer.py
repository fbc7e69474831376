"""BLEProof / Noke peer on bluez-peripheral (pip install bluez-peripheral;
BlueZ D-Bus via dbus-next).

    python bluez_peripheral_peer.py --profile noke|bleproof --adapter hciN

Notifies and indicates through PropertiesChanged (characteristic.changed()).
Prints "ready" once the advertisement is registered.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import behaviour as B  # noqa: E402

from bluez_peripheral.advert import Advertisement  # noqa: E402
from bluez_peripheral.gatt.characteristic import CharacteristicFlags as F, characteristic  # noqa: E402
from bluez_peripheral.gatt.service import Service  # noqa: E402
from bluez_peripheral.util import Adapter, get_message_bus  # noqa: E402


class NokeService(Service):
    def __init__(self):
        self.session_value = B.noke_session()
        super().__init__(B.NOKE["service"], True)

    @characteristic(B.NOKE["rx"], F.WRITE | F.WRITE_WITHOUT_RESPONSE)
    def rx(self, options):
        return b""

    @rx.setter
    def rx(self, value, options):
        for v in B.noke_answer(bytes(value)):
            self.tx.changed(v)

    @characteristic(B.NOKE["tx"], F.READ | F.NOTIFY)
    def tx(self, options):
        return bytes(20)

    @characteristic(B.NOKE["session"], F.READ)
    def session(self, options):
        return self.session_value


class BleproofService(Service):
    def __init__(self):
        super().__init__(B.BLEPROOF["service"], True)

    @characteristic(B.BLEPROOF["info"], F.READ)
    def info(self, options):
        return b"iPhone ABC"

    @characteristic(B.BLEPROOF["config"], F.WRITE)
    def config(self, options):
        return b""

    @config.setter
    def config(self, value, options):
        self.status.changed(B.bleproof_answer(bytes(value)))

    @characteristic(B.BLEPROOF["status"], F.INDICATE)
    def status(self, options):
        return b"iPhone CBA"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", choices=["noke", "bleproof"], required=True)
    ap.add_argument("--adapter", required=True)
    a = ap.parse_args()
    bus = await get_message_bus()
    path = f"/org/bluez/{a.adapter}"
    adapter = Adapter(bus.get_proxy_object("org.bluez", path, await bus.introspect("org.bluez", path)))
    if a.profile == "noke":
        name = B.noke_name(await adapter.get_address())
        service = NokeService()
        # Without the manufacturer data: bluez-peripheral always exports
        # Appearance, and flags + 128-bit UUID + appearance + manufacturer
        # data exceed legacy advertising's 31 bytes ("Advertising data too
        # long" in bluetoothd 5.66).
        advert = Advertisement(name, [B.NOKE["service"]], 0, 0)
    else:
        name = "BLEProof"
        service = BleproofService()
        advert = Advertisement(name, [B.BLEPROOF["service"]], 0, 0)
    await adapter.set_alias(name)
    await service.register(bus, adapter=adapter)
    await advert.register(bus, adapter)
    await B.serve_until_signal(service.unregister)


if __name__ == "__main__":
    asyncio.run(main())
