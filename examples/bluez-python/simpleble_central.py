#!/usr/bin/env python3
"""A SimpleBLE central (simplepyble, PyPI) against the lab's peripheral in
examples/bluez-python/simpleble-target.yaml, through bluetoothd. SimpleBLE talks to bluetoothd with
its own D-Bus client (SimpleBluez over libdbus), not bleak's. The script makes both of SimpleBLE's
writes, subscribes, and writes back the notifications it was handed; the lab judges what crossed
the link (`blelab run --central none`, docs/bluez.md, "Python libraries on BlueZ").

    simpleble_central.py [ADAPTER]        (default hci0; exits 1 after 60 s without finishing)

  B3E1 (write, write-without-response)  Peripheral.write_request
  B3E2 (write, write-without-response)  Peripheral.write_command
  B3E6 (write)                          the values notified on B3E5, joined by ",", write_request
"""
import sys
import threading
import time

import simplepyble


def uuid16(short: str) -> str:
    return f"0000{short.lower()}-0000-1000-8000-00805f9b34fb"


ADAPTER = sys.argv[1] if len(sys.argv) > 1 else "hci0"
SERVICE = uuid16("B3E0")
NOTIFICATIONS = 3
DEADLINE = time.monotonic() + 60


def fail(why: str) -> None:
    print(f"simpleble: {why}", file=sys.stderr, flush=True)
    sys.exit(1)


adapter = next((a for a in simplepyble.Adapter.get_adapters() if a.identifier() == ADAPTER), None)
if adapter is None:
    fail(f"no adapter {ADAPTER}")

target = None
while target is None and time.monotonic() < DEADLINE - 20:
    adapter.scan_for(3000)
    target = next((p for p in adapter.scan_get_results()
                   if any(s.uuid() == SERVICE for s in p.services())), None)
if target is None:
    fail("no device advertising B3E0")
print(f"simpleble: found {target.address()} ({target.identifier()})", flush=True)

target.connect()
target.write_request(SERVICE, uuid16("B3E1"), b"write_request")
target.write_command(SERVICE, uuid16("B3E2"), b"write_command")
print("simpleble: wrote B3E1, B3E2", flush=True)

received: list = []
enough = threading.Event()


def on_value(data: bytes) -> None:
    received.append(bytes(data))
    if len(received) >= NOTIFICATIONS:
        enough.set()


target.notify(SERVICE, uuid16("B3E5"), on_value)
if not enough.wait(max(1.0, DEADLINE - time.monotonic())):
    fail(f"{len(received)} of {NOTIFICATIONS} notifications within the time")
target.unsubscribe(SERVICE, uuid16("B3E5"))
echo = b",".join(received)
target.write_request(SERVICE, uuid16("B3E6"), echo)
print(f"simpleble: {len(received)} notifications, wrote back {echo!r}", flush=True)
target.disconnect()
