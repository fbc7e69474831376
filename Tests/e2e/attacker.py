"""An unprivileged local user attacking a running gattemu (used by test_hostile.py).

    python attacker.py spoof NAME --dest UNIQUE|broadcast --owner UNIQUE --adapter hciN
    python attacker.py call --dest UNIQUE [--stay-root]     ReadValue with offset -5
    python attacker.py idle-http --port P --count N --hold S
    python attacker.py sse --port P --count N --hold S
    python attacker.py routes --port P --operations JSON --token-file F   every route, without and with a guessed token
    python attacker.py serve [--stay-root]     the spoof, call and routes commands, one JSON object a line on stdin
                                               ({"what": "spoof", "name": …, "dest": …, "owner": …, "adapter": …}), one
                                               JSON line of result each on stdout: one Python start for a table of attacks
                                               (under TCG a start with the D-Bus module took seconds)

Started as root, it raises its descriptor limit and then becomes `nobody` (uid 65534) before doing
anything, unless --stay-root: the point is what any local user can do. Prints one JSON line with
what happened.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sys
import time

NOBODY = 65534


def drop_privileges(files: int = 4096) -> None:
    if os.getuid() != 0:
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def spoof(name: str, dest: str | None, owner: str, adapter: str) -> dict:
    """Signals posing as the bus (NameOwnerChanged) and as bluetoothd (everything else), each from a connection of
    its own (a new unique name, as a new process would have)."""
    import dbus
    import dbus.lowlevel as low
    bus = dbus.SystemBus(private=True)
    adapter_path = f"/org/bluez/{adapter}"
    fake_device = f"{adapter_path}/dev_66_66_66_66_66_66"
    true = dbus.Boolean(True, variant_level=1)
    false = dbus.Boolean(False, variant_level=1)
    messages = {
        "bluetoothd-gone": ("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", "sss",
                            ["org.bluez", owner, ""]),
        "bluetoothd-replaced": ("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", "sss",
                                ["org.bluez", owner, ":1.9999"]),
        "adapter-removed": ("/", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", "oas",
                            [dbus.ObjectPath(adapter_path), ["org.bluez.Adapter1"]]),
        "adapter-powered-off": (adapter_path, "org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as",
                                ["org.bluez.Adapter1", dbus.Dictionary({"Powered": false}, signature="sv"), []]),
        "fake-central-connected": (fake_device, "org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as",
                                   ["org.bluez.Device1", dbus.Dictionary({"Connected": true}, signature="sv"), []]),
        "fake-central-added": ("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", "oa{sa{sv}}",
                               [dbus.ObjectPath(fake_device),
                                dbus.Dictionary({"org.bluez.Device1": dbus.Dictionary({"Connected": true}, signature="sv")},
                                                signature="sa{sv}")]),
    }
    path, interface, member, signature, args = messages[name]
    message = low.SignalMessage(path, interface, member)
    if dest:
        message.set_destination(dest)
    message.append(*args, signature=signature)
    bus.send_message(message)
    bus.flush()
    bus.close()
    return {"sent": name, "unicast": bool(dest), "uid": os.getuid()}


def call(dest: str) -> dict:
    import dbus
    bus = dbus.SystemBus(private=True)
    obj = bus.get_object(dest, "/org/gattemu/app0/service0/char0", introspect=False)
    try:
        obj.ReadValue(dbus.Dictionary({"offset": dbus.Int64(-5, variant_level=1)}, signature="sv"),
                      dbus_interface="org.bluez.GattCharacteristic1", timeout=10)
        return {"error": None, "uid": os.getuid()}
    except dbus.DBusException as e:
        return {"error": e.get_dbus_name(), "uid": os.getuid()}
    finally:
        bus.close()


def hold_connections(port: int, count: int, hold: float, request: bytes | None) -> dict:
    opened, refused = [], 0
    for _ in range(count):
        s = socket.socket()
        # Short: a server that stops accepting leaves connects hanging in a full backlog.
        s.settimeout(0.3)
        try:
            s.connect(("127.0.0.1", port))
            if request:
                s.sendall(request)
            opened.append(s)
        except OSError:
            refused += 1
            s.close()
    # Report what is still open after a moment (the server may close what it will not serve).
    print(json.dumps({"opened": len(opened), "refused": refused}), flush=True)
    end = time.monotonic() + hold
    while time.monotonic() < end:
        time.sleep(0.2)
    alive = 0
    for s in opened:
        try:
            s.setblocking(False)
            alive += 1 if s.recv(1, socket.MSG_PEEK) != b"" else 0
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.close()
    return {"opened": len(opened), "refused": refused, "alive_at_end": alive, "uid": os.getuid()}


def routes(port: int, operations: list[list[str]], token_file: str) -> dict:
    """Each (method, path) of the control API, read or write, as this user: no token, a guessed one, and the token
    file's (which this user must not be able to read). Returns the statuses seen."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    import gattemu
    try:
        stolen = open(token_file).read().strip()
        read = "read"
    except OSError as error:
        stolen, read = None, type(error).__name__
    seen = []
    for method, path in operations:
        for token in (None, "0" * 64, stolen):
            # Only what this user has: "" sends no token (the client would otherwise look for this user's file).
            api = gattemu.Client(f"http://127.0.0.1:{port}", token or "", environ={})
            headers = {"Content-Type": "application/json"} if method in ("POST", "PUT") else {}
            body = b'{"on": "read", "drop": true}' if method in ("POST", "PUT") else None
            try:
                status = api.raw(method, path, body, headers=headers).status
            except gattemu.ConnectionFailed as error:
                status = type(error.__cause__ or error).__name__
            seen.append([method, path, "none" if token is None else "guessed" if token != stolen else "file", status])
    return {"uid": os.getuid(), "token_file": read, "answers": seen}


def serve() -> int:
    """Commands from stdin until it closes, each answered with a line (an exception as {"exception": …})."""
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        try:
            what = command["what"]
            if what == "spoof":
                dest = command["dest"]
                result = spoof(command["name"], None if dest == "broadcast" else dest, command["owner"], command["adapter"])
            elif what == "call":
                result = call(command["dest"])
            elif what == "routes":
                result = routes(command["port"], command["operations"], command["token_file"])
            else:
                result = {"exception": f"unknown command {what!r}"}
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
            result = {"exception": f"{type(error).__name__}: {error}"}
        print(json.dumps(result), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("spoof")
    p.add_argument("name")
    p.add_argument("--dest", required=True)
    p.add_argument("--owner", required=True)
    p.add_argument("--adapter", required=True)
    p = sub.add_parser("call")
    p.add_argument("--dest", required=True)
    p.add_argument("--stay-root", action="store_true")
    p = sub.add_parser("serve")
    p.add_argument("--stay-root", action="store_true")
    p = sub.add_parser("routes")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--operations", required=True)
    p.add_argument("--token-file", required=True)
    for name in ("idle-http", "sse"):
        p = sub.add_parser(name)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--count", type=int, required=True)
        p.add_argument("--hold", type=float, default=5)
    args = parser.parse_args()
    if not getattr(args, "stay_root", False):
        drop_privileges()
    if args.what == "serve":
        return serve()
    if args.what == "spoof":
        result = spoof(args.name, None if args.dest == "broadcast" else args.dest, args.owner, args.adapter)
    elif args.what == "call":
        result = call(args.dest)
    elif args.what == "routes":
        result = routes(args.port, json.loads(args.operations), args.token_file)
    elif args.what == "idle-http":
        result = hold_connections(args.port, args.count, args.hold, None)
    else:
        request = f"GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1:{args.port}\r\nAccept: text/event-stream\r\n\r\n".encode()
        result = hold_connections(args.port, args.count, args.hold, request)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
