#!/usr/bin/env python3
"""A bless (PyPI) GATT server on bluetoothd, under BLELab's central
(`blelab run --peripheral none:bless-sensor@ADDRESS`, examples/bluez-python/bless-sensor.yaml;
docs/bluez.md, "Python libraries on BlueZ"). What a Linux device built on bless serves: one
service B2E0 with a command characteristic B2E1 (read, write, write-without-response) and a
status characteristic B2E2 (read, notify). Every value written to B2E1 is kept (a read returns
it) and announced on B2E2 as "echo:" + value; a write of "bye" ends the script.

    bless_peripheral.py [ADAPTER]    (default hci0; prints "bless: advertising" once it is; exits 0
                                      after "bye", 1 after 90 s without it)
"""
import asyncio
import sys

from bless import BlessServer, GATTAttributePermissions, GATTCharacteristicProperties

ADAPTER = sys.argv[1] if len(sys.argv) > 1 else "hci0"
SERVICE = "0000b2e0-0000-1000-8000-00805f9b34fb"
COMMAND = "0000b2e1-0000-1000-8000-00805f9b34fb"
STATUS = "0000b2e2-0000-1000-8000-00805f9b34fb"


async def main() -> None:
    done = asyncio.Event()
    server = BlessServer(name="BlessSensor", adapter=ADAPTER)

    def on_read(characteristic, **_):
        return characteristic.value

    def on_write(characteristic, value, **_):
        characteristic.value = bytearray(value)
        print(f"bless: {characteristic.uuid} written {bytes(value)!r}", flush=True)
        if characteristic.uuid == COMMAND:
            status = server.get_characteristic(STATUS)
            status.value = bytearray(b"echo:" + bytes(value))
            server.update_value(SERVICE, STATUS)
            if bytes(value) == b"bye":
                done.set()

    server.read_request_func = on_read
    server.write_request_func = on_write
    await server.add_new_service(SERVICE)
    await server.add_new_characteristic(
        SERVICE, COMMAND,
        GATTCharacteristicProperties.read | GATTCharacteristicProperties.write
        | GATTCharacteristicProperties.write_without_response,
        bytearray(b"idle"), GATTAttributePermissions.readable | GATTAttributePermissions.writeable)
    await server.add_new_characteristic(
        SERVICE, STATUS, GATTCharacteristicProperties.read | GATTCharacteristicProperties.notify,
        bytearray(b"echo:"), GATTAttributePermissions.readable)
    await server.start()
    print("bless: advertising", flush=True)
    try:
        await asyncio.wait_for(done.wait(), 90)
    finally:
        await server.stop()
    print("bless: stopped after bye", flush=True)


asyncio.run(main())
