#!/usr/bin/env python3
"""A stand-in for a team's own BlueZ-based central (docs/bluez.md, "Pointing the lab at your own
BlueZ-based central"): a serial gateway that finds the module advertising service FFE0, connects,
writes "hello" to FFE1 with WriteValue and no "type" (BlueZ chooses the ATT write), and exits 0
once the write returned. It talks to bluetoothd the way a script without D-Bus bindings would:
calls through busctl (systemd), and the scan through one bluetoothctl session, since bluetoothd
ties a discovery and its filter to the D-Bus client that asked (both end when it disconnects),
so a busctl that exits would stop the scan it started.

    gateway.py [ADAPTER]        (default hci0; gives up after 60 s)
"""
import json
import subprocess
import sys
import time

ADAPTER = "/org/bluez/" + (sys.argv[1] if len(sys.argv) > 1 else "hci0")
SERVICE = "0000ffe0-0000-1000-8000-00805f9b34fb"
CHARACTERISTIC = "0000ffe1-0000-1000-8000-00805f9b34fb"
DEADLINE = time.monotonic() + 60


def busctl(*args):
    out = subprocess.run(["busctl", "--system", "--json=short", "call", "org.bluez", *args],
                         check=True, capture_output=True, text=True, timeout=30).stdout
    return json.loads(out) if out.strip() else None


def objects():
    reply = subprocess.run(["busctl", "--system", "--json=short", "call", "org.bluez", "/",
                            "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"],
                           check=True, capture_output=True, text=True, timeout=30).stdout
    return json.loads(reply)["data"][0]


def prop(interfaces, interface, name, default=None):
    entry = interfaces.get(interface, {}).get(name)
    return entry["data"] if entry else default


def wait_for(what, find):
    """Polls bluetoothd's objects until `find` returns something (bounded by the deadline)."""
    while time.monotonic() < DEADLINE:
        found = find(objects())
        if found:
            return found
        time.sleep(0.2)
    sys.exit(f"gateway: gave up waiting for {what}")


busctl(ADAPTER, "org.freedesktop.DBus.Properties", "Set", "ssv", "org.bluez.Adapter1", "Powered", "b", "true")
# bluetoothctl's scan menu sets SetDiscoveryFilter({UUIDs, Transport}) and StartDiscovery.
scanner = subprocess.Popen(["bluetoothctl"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
scanner.stdin.write(f"select {sys.argv[1] if len(sys.argv) > 1 else 'hci0'}\nmenu scan\nuuids {SERVICE}\ntransport le\nback\nscan on\n")
scanner.stdin.flush()
device = wait_for("a device advertising FFE0", lambda tree: next(
    (path for path, i in sorted(tree.items())
     if path.startswith(ADAPTER + "/") and SERVICE in prop(i, "org.bluez.Device1", "UUIDs", [])), None))
scanner.stdin.write("scan off\nquit\n")
scanner.stdin.close()
scanner.wait(timeout=30)
print(f"gateway: found {device}", flush=True)
busctl(device, "org.bluez.Device1", "Connect")
characteristic = wait_for("FFE1 after ServicesResolved", lambda tree: prop(
    tree.get(device, {}), "org.bluez.Device1", "ServicesResolved", False) and next(
    (path for path, i in sorted(tree.items())
     if path.startswith(device + "/") and prop(i, "org.bluez.GattCharacteristic1", "UUID") == CHARACTERISTIC), None))
value = b"hello"
busctl(characteristic, "org.bluez.GattCharacteristic1", "WriteValue", "aya{sv}",
       str(len(value)), *[str(b) for b in value], "0")
print(f"gateway: wrote {value!r} to {characteristic} with no type", flush=True)
busctl(device, "org.bluez.Device1", "Disconnect")
