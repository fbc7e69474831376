"""A central wrapper that writes down every GATT operation as the central saw
it, to hold against gattemu's event log (test_gattemu_eventlog.py).

`RecordingCentral(central)` behaves like the wrapped central (find, connect,
...); each connection it returns appends to `ops`, in the order the central
did or saw things:
  ("connected",), ("read", char, value), ("write", char, value),
  ("subscribed", char), ("notify" | "indicate", char, value), ("disconnected",)
where `char` is the characteristic's id in the profile (mapped from its UUID).
"""
from __future__ import annotations

import json
from pathlib import Path


def characteristic_ids(profile: str) -> dict[str, str]:
    """UUID (lower case) -> characteristic id, from a profile file and the
    profiles it extends."""
    data = json.loads(Path(profile).read_text())
    ids: dict[str, str] = {}
    parent = data.get("extends")
    if parent:
        ids.update(characteristic_ids(str(Path(profile).parent / parent)))
    for service in data.get("services", []):
        for c in service.get("characteristics", []):
            ids[full_uuid(c["uuid"])] = c["id"]
    return ids


def full_uuid(u: str) -> str:
    u = u.lower()
    return f"0000{u}-0000-1000-8000-00805f9b34fb" if len(u) == 4 else u


class RecordingConnection:
    def __init__(self, inner, ids: dict[str, str], ops: list):
        self.inner, self.ids, self.ops = inner, ids, ops

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _id(self, uuid: str) -> str:
        return self.ids.get(full_uuid(uuid), uuid)

    async def read(self, uuid):
        value = await self.inner.read(uuid)
        self.ops.append(("read", self._id(uuid), bytes(value).hex()))
        return value

    async def write(self, uuid, data, response=True):
        self.ops.append(("write", self._id(uuid), bytes(data).hex()))
        await self.inner.write(uuid, data, response=response)

    async def subscribe(self, uuid, callback, indicate=False):
        char, kind = self._id(uuid), "indicate" if indicate else "notify"

        def record(value):
            self.ops.append((kind, char, bytes(value).hex()))
            callback(value)

        await self.inner.subscribe(uuid, record, indicate=indicate)
        self.ops.append(("subscribed", char))

    async def disconnect(self):
        if self.inner.is_connected:
            self.ops.append(("disconnected",))
        await self.inner.disconnect()


class RecordingCentral:
    def __init__(self, inner, profile: str):
        self.inner, self.ids, self.ops = inner, characteristic_ids(profile), []
        self.mtus: list[int] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def connect(self, *args, **kwargs):
        conn = await self.inner.connect(*args, **kwargs)
        self.ops.append(("connected",))
        self.mtus.append(conn.mtu)
        return RecordingConnection(conn, self.ids, self.ops)


def read_events(path) -> list[dict]:
    """The JSON-lines event log written by `gattemu run --events FILE`."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def log_operations(events: list[dict], central: str) -> list[tuple]:
    """The event log's view of the same operations, in `seq` order: a read is
    its `answer` (the value the central got), notifications/indications are
    the values sent (every subscriber of the characteristic gets them)."""
    ops: list[tuple] = []
    pending_reads: set[str] = set()
    for e in sorted(events, key=lambda e: e["seq"]):
        kind, char, mine = e["event"], e.get("characteristic"), e.get("central") == central
        if kind in ("connected", "disconnected") and mine:
            ops.append((kind,))
        elif kind == "subscribed" and mine:
            ops.append(("subscribed", char))
        elif kind == "read" and mine:
            pending_reads.add(char)
        elif kind == "answer" and mine and char in pending_reads and "value" in e:
            pending_reads.discard(char)
            ops.append(("read", char, e["value"]))
        elif kind == "write" and mine:
            ops.append(("write", char, e.get("value", "")))
        elif kind in ("notify", "indicate"):
            ops.append((kind, char, e.get("value", "")))
    return ops
