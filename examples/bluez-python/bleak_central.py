#!/usr/bin/env python3
"""A bleak (PyPI) central against the lab's peripheral in examples/bluez-python/bleak-target.yaml,
through bluetoothd, the way a Linux application uses bleak. It makes each kind of write bleak
offers, subscribes, and writes back the notifications it was handed. It asserts nothing itself:
the lab judges what crossed the link (`blelab run --central none`, docs/bluez.md, "Python
libraries on BlueZ").

    bleak_central.py [ADAPTER]        (default hci0; exits 1 after 60 s without finishing)

The writes, each to a characteristic of its own, so the lab can tell which PDU each API sent:
  B1E1 (write, write-without-response)  write_gatt_char(..., response=True)
  B1E2 (write, write-without-response)  write_gatt_char(..., response=False)
  B1E3 (write, write-without-response)  write_gatt_char(...) with no response argument
  B1E4 (write-without-response only)    write_gatt_char(...) with no response argument
  B1E6 (write)                          the values notified on B1E5, joined by ",", response=True
"""
import asyncio
import sys
import warnings

from bleak import BleakClient, BleakScanner


def uuid16(short: str) -> str:
    return f"0000{short.lower()}-0000-1000-8000-00805f9b34fb"


ADAPTER = sys.argv[1] if len(sys.argv) > 1 else "hci0"
SERVICE = uuid16("B1E0")
NOTIFICATIONS = 3


async def main() -> None:
    device = await BleakScanner.find_device_by_filter(
        lambda d, adv: SERVICE in adv.service_uuids, timeout=30, service_uuids=[SERVICE], bluez={"adapter": ADAPTER})
    if device is None:
        sys.exit("bleak: no device advertising B1E0 within 30 s")
    print(f"bleak: found {device.address} ({device.name})", flush=True)
    async with BleakClient(device, bluez={"adapter": ADAPTER}) as client:
        await client.write_gatt_char(uuid16("B1E1"), b"response=True", response=True)
        await client.write_gatt_char(uuid16("B1E2"), b"response=False", response=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # omitting response is deprecated: that choice is what is measured
            await client.write_gatt_char(uuid16("B1E3"), b"response omitted")
            await client.write_gatt_char(uuid16("B1E4"), b"response omitted")
        print("bleak: wrote B1E1..B1E4", flush=True)

        received: list[bytes] = []
        enough = asyncio.Event()

        def on_value(_, data: bytearray) -> None:
            received.append(bytes(data))
            if len(received) >= NOTIFICATIONS:
                enough.set()

        await client.start_notify(uuid16("B1E5"), on_value)
        await asyncio.wait_for(enough.wait(), 20)
        await client.stop_notify(uuid16("B1E5"))
        echo = b",".join(received)
        await client.write_gatt_char(uuid16("B1E6"), echo, response=True)
        print(f"bleak: {len(received)} notifications, wrote back {echo!r}", flush=True)


asyncio.run(asyncio.wait_for(main(), 60))
