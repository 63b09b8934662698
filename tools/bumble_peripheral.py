#!/usr/bin/env python3
"""A Bumble Device as a GATT peripheral (an independent host stack to test BLELab's against).

    bumble_peripheral.py ENDPOINT [--name NAME] [--address ADDR] [--echo] [--notify-on-subscribe VALUE]
                                  [--lenient] [--once] [--att-log]

ENDPOINT is the controller's H4 socket: tcp:HOST:PORT (RootCanal's HCI port, a
bumble_controllers.py endpoint), HOST:PORT, or unix:PATH. Run it with the venv's Python.

Its GATT server has one service, SERVICE_UUID, with three characteristics (tools/bumble_common.py):
    WRITE_UUID   properties: write                   (Write Request only)
    WWR_UUID     properties: write-without-response  (Write Command only)
    NOTIFY_UUID  properties: notify                  (with its CCCD)
It advertises (legacy ADV_IND, connectable) with flags and the 128-bit service UUID in the
advertising data and the complete name in the scan response, from a random static address, and
advertises again after each disconnection (unless --once).

stdout: one JSON object per line, {"t": seconds, "event": NAME, ...}:
    ready         address, address_type, name, service, characteristics {role: {uuid, handle}}
    advertising   (again after each disconnection)
    connected     peer_address, peer_address_type, handle
    mtu           mtu (after an Exchange MTU)
    write         opcode (0x12 or 0x52), op ("write-request" | "write-command"), handle,
                  characteristic (UUID), role ("write" | "write-without-response" | other),
                  value_hex, value_text (if printable), accepted (bool), why (when refused)
    subscribed    characteristic, notify, indicate
    notified      characteristic, value_hex, value_text, subscribers
    att           (with --att-log) every ATT PDU received: opcode, op
    disconnected  reason
    error         message
    pairing       ltk_hex, irk, csrk (a pairing completed; with --pairing)
    pairing-failure reason (the SMP Pairing Failed reason)
    encryption    enabled, key_size (each encryption change)
    passkey-shown passkey; compare number; passkey-requested passkey (the "user's" part)
ATT writes are logged where the ATT PDU arrives (a hook in front of Bumble's GATT server, which
itself hands characteristic callbacks only the value, not the opcode).

By default the server enforces the properties the way a strict device would: a Write Request to a
characteristic without the write property gets ATT Error "Write Not Permitted" (0x03); a Write
Command to one without write-without-response is dropped (logged with accepted=false). Bumble
itself does neither (its server marks permission checks TODO): --lenient hands everything to it.

Notifications, on request: --echo notifies every accepted write's value on NOTIFY_UUID;
--notify-on-subscribe VALUE sends one when the client subscribes; and stdin takes commands, one
per line: "notify VALUE" (text:..., hex:..., or plain text) and "quit".
Values: text:hello, hex:68656c6c6f, 0x68656c6c6f, or plain text.
SIGTERM/SIGINT/quit: disconnects, exits 0.

L2CAP: --l2cap-psm PSM serves LE credit based channels (Core 5.4 Vol 3 Part A 4.22) on PSM with
--l2cap-mtu, --l2cap-mps and --l2cap-credits (Bumble's LeCreditBasedChannelSpec) and echoes every
SDU back on its channel (Bumble's write() packs what is queued into SDUs up to the peer's MTU:
a peer that wants its SDUs back whole sends the next once the echo came). Events: l2cap-open (psm, cid, peer_cid, mtu, mps, peer_mtu, peer_mps,
credits: what the peer granted Bumble, peer_credits: what Bumble granted), l2cap-sdu (length, head_hex: the first 16 octets), l2cap-closed. The stdin
command "l2cap-disconnect" disconnects the open channels; --l2cap-disconnect-after N has a
channel disconnected by Bumble once it has echoed N SDUs.

Security: --secret VALUE adds B1E1AB04-… (read), readable only on an encrypted link (Bumble answers
Insufficient Encryption otherwise). --pairing IO turns pairing on with that IO capability
(no-input-no-output, display-only, display-yes-no, keyboard-only, keyboard-display); --legacy,
--mitm, --no-bonding, --passkey N (shown or typed), --reject (the user refuses).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bumble_common import (SERVICE_UUID, WRITE_UUID, WWR_UUID, NOTIFY_UUID, ATT_OPCODES, emit,  # noqa: E402
                           bumble_transport_spec, parse_value, value_fields, address_fields, uuid_text, open_h4,
                           add_pairing_arguments, pairing_config_factory, watch_pairing)

SECRET_UUID = "B1E1AB04-0000-4C0A-B1E1-AB0000000000"     # --secret: read, needs encryption

try:
    from bumble import att, hci, l2cap
    from bumble.core import AdvertisingData, UUID
    from bumble.device import Device, DeviceConfiguration
    from bumble.gatt import Characteristic, CharacteristicValue, Service
except ImportError as err:  # pragma: no cover
    sys.stderr.write("bumble_peripheral: cannot import bumble (%s); use the venv's python (tools/setup-venv.sh)\n" % err)
    sys.exit(2)


ATT_WRITE_REQUEST, ATT_WRITE_COMMAND = 0x12, 0x52


def advertising_payloads(name: str):
    flags = bytes([2, 0x01, 0x06])
    uuid_le = bytes(UUID(SERVICE_UUID).to_bytes())           # little-endian, 16 octets
    adv = flags + bytes([17, 0x07]) + uuid_le                # Complete List of 128-bit Service UUIDs
    raw = name.encode()[:29]
    scan_response = bytes([len(raw) + 1, 0x09]) + raw       # Complete Local Name
    return adv, scan_response


class Peripheral:
    def __init__(self, args):
        self.args = args
        self.l2cap_channels = []
        self.device = None
        self.chars = {}
        self.role_by_handle = {}
        self.connections = set()
        self.stop = None

    def build_gatt(self):
        P = Characteristic.Properties
        self.chars["write"] = Characteristic(WRITE_UUID, P.WRITE, Characteristic.WRITEABLE,
                                             CharacteristicValue(write=self.on_value_written("write")))
        self.chars["write-without-response"] = Characteristic(
            WWR_UUID, P.WRITE_WITHOUT_RESPONSE, Characteristic.WRITEABLE,
            CharacteristicValue(write=self.on_value_written("write-without-response")))
        self.chars["notify"] = Characteristic(NOTIFY_UUID, P.NOTIFY, Characteristic.READABLE, b"")
        if self.args.secret is not None:
            self.chars["secret"] = Characteristic(SECRET_UUID, P.READ, Characteristic.READABLE | Characteristic.READ_REQUIRES_ENCRYPTION,
                                                  parse_value(self.args.secret))
        self.device.add_service(Service(SERVICE_UUID, list(self.chars.values())))

    def on_value_written(self, role):
        def write(connection, value):
            if self.args.echo:
                asyncio.get_running_loop().create_task(self.notify(bytes(value), why="echo"))
        return write

    def hook_att(self):
        server = self.device.gatt_server
        original = server.on_gatt_pdu

        def on_gatt_pdu(bearer, pdu):
            opcode = pdu.op_code
            op = ATT_OPCODES.get(opcode, "0x%02x" % opcode)
            if self.args.att_log:
                emit("att", opcode="0x%02x" % opcode, op=op)
            if opcode in (ATT_WRITE_REQUEST, ATT_WRITE_COMMAND):
                handle = pdu.attribute_handle
                value = bytes(pdu.attribute_value)
                attribute = server.get_attribute(handle)
                role = self.role_by_handle.get(handle)
                is_cccd = attribute is not None and uuid_text(attribute.type) == "2902"
                uuid = uuid_text(attribute.type) if attribute is not None else None
                record = dict(opcode="0x%02x" % opcode, op=op, handle=handle, characteristic=uuid,
                              role=role or ("cccd" if is_cccd else "other"), **value_fields(value))
                refuse = None
                if not self.args.lenient and role is not None:
                    props = self.chars[role].properties
                    if opcode == ATT_WRITE_REQUEST and not props & Characteristic.Properties.WRITE:
                        refuse = "write-request to a characteristic without the write property"
                    if opcode == ATT_WRITE_COMMAND and not props & Characteristic.Properties.WRITE_WITHOUT_RESPONSE:
                        refuse = "write-command to a characteristic without write-without-response"
                if refuse:
                    emit("write", accepted=False, why=refuse, **record)
                    if opcode == ATT_WRITE_REQUEST:
                        server.send_response(bearer, att.ATT_Error_Response(
                            request_opcode_in_error=opcode, attribute_handle_in_error=handle,
                            error_code=att.ATT_WRITE_NOT_PERMITTED_ERROR))
                    return None
                emit("write", accepted=True, **record)
            return original(bearer, pdu)

        server.on_gatt_pdu = on_gatt_pdu

    async def notify(self, value: bytes, why: str = "request"):
        characteristic = self.chars["notify"]
        subscribers = sum(1 for cccds in self.device.gatt_server.subscribers.values()
                          if cccds.get(characteristic.handle, b"\0")[0] & 1)
        if subscribers == 0:
            emit("error", message="notify (%s): no client has subscribed to %s" % (why, NOTIFY_UUID))
            return
        await self.device.notify_subscribers(characteristic, value)
        emit("notified", characteristic=NOTIFY_UUID, subscribers=subscribers, why=why, **value_fields(value))

    async def advertise(self):
        adv, scan_response = advertising_payloads(self.args.name)
        await self.device.start_advertising(own_address_type=hci.OwnAddressType.RANDOM, auto_restart=False,
                                            advertising_data=adv, scan_response_data=scan_response,
                                            advertising_interval_min=self.args.interval,
                                            advertising_interval_max=self.args.interval)
        emit("advertising", name=self.args.name)

    def on_connection(self, connection):
        self.connections.add(connection)
        emit("connected", handle=connection.handle, role="peripheral",
             **{"peer_" + k: v for k, v in address_fields(connection.peer_address).items()})

        def on_disconnection(reason):
            self.connections.discard(connection)
            emit("disconnected", handle=connection.handle, reason=int(reason))
            if self.args.once:
                self.stop.done() or self.stop.set_result("once")
            else:
                asyncio.get_running_loop().create_task(self.advertise())

        def on_mtu(mtu):
            emit("mtu", mtu=mtu)

        connection.on("disconnection", on_disconnection)
        connection.on("connection_att_mtu_update", lambda: on_mtu(connection.att_mtu))
        watch_pairing(connection)

    def on_subscription(self, connection, characteristic, notify, indicate):
        emit("subscribed", characteristic=uuid_text(characteristic.uuid), notify=bool(notify), indicate=bool(indicate))
        if notify and self.args.notify_on_subscribe is not None and characteristic is self.chars["notify"]:
            asyncio.get_running_loop().create_task(
                self.notify(parse_value(self.args.notify_on_subscribe), why="on-subscribe"))

    def watch_stdin(self):
        """Reads commands from stdin when it is a pipe or a terminal (epoll refuses files and
        /dev/null: then there is simply no command channel)."""
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()
        buffer = bytearray()

        def on_readable():
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                loop.remove_reader(fd)  # EOF: keep running, the parent just has nothing to say
                return
            buffer.extend(chunk)
            while b"\n" in buffer:
                line, _, rest = bytes(buffer).partition(b"\n")
                buffer[:] = rest
                self.command(line.decode(errors="replace").strip())

        try:
            loop.add_reader(fd, on_readable)
        except (PermissionError, ValueError, OSError):
            pass

    def command(self, line: str):
        words = line.split(None, 1)
        if not words:
            return
        if words[0] == "notify" and len(words) == 2:
            asyncio.get_running_loop().create_task(self.notify(parse_value(words[1])))
        elif words[0] == "quit":
            self.stop.done() or self.stop.set_result("quit")
        elif words[0] == "l2cap-disconnect":
            for channel in list(self.l2cap_channels):
                asyncio.get_running_loop().create_task(channel.disconnect())
        else:
            emit("error", message="unknown command %r (notify VALUE | l2cap-disconnect | quit)" % line)

    def serve_l2cap(self):
        spec = l2cap.LeCreditBasedChannelSpec(psm=self.args.l2cap_psm, mtu=self.args.l2cap_mtu, mps=self.args.l2cap_mps,
                                              max_credits=self.args.l2cap_credits)
        self.device.create_l2cap_server(spec=spec, handler=self.on_l2cap_channel)

    def on_l2cap_channel(self, channel):
        self.l2cap_channels.append(channel)
        emit("l2cap-open", psm=channel.psm, cid=channel.source_cid, peer_cid=channel.destination_cid, mtu=channel.mtu,
             mps=channel.mps, peer_mtu=channel.peer_mtu, peer_mps=channel.peer_mps, credits=channel.credits,
             peer_credits=channel.peer_credits)

        echoed = [0]

        def on_sdu(sdu):
            emit("l2cap-sdu", length=len(sdu), head_hex=bytes(sdu[:16]).hex())
            channel.write(bytes(sdu))
            echoed[0] += 1
            if echoed[0] == self.args.l2cap_disconnect_after:
                async def disconnect():
                    await channel.drain()
                    emit("l2cap-disconnecting", cid=channel.source_cid)
                    await channel.disconnect()
                asyncio.get_running_loop().create_task(disconnect())

        def on_close():
            if channel in self.l2cap_channels:
                self.l2cap_channels.remove(channel)
            emit("l2cap-closed", cid=channel.source_cid)

        channel.sink = on_sdu
        channel.on("close", on_close)

    async def run(self):
        loop = asyncio.get_running_loop()
        self.stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda s=sig: self.stop.done() or self.stop.set_result(s))
        spec = bumble_transport_spec(self.args.endpoint)
        try:
            transport = await open_h4(self.args.endpoint)
        except Exception as err:  # noqa: BLE001
            emit("error", message="cannot open %s (%s): %s" % (self.args.endpoint, spec, err))
            return 2
        async with transport:
            config = DeviceConfiguration()
            config.name = self.args.name
            config.address = hci.Address(self.args.address)
            self.device = Device.from_config_with_hci(config, transport.source, transport.sink)
            factory = pairing_config_factory(self.args)
            if factory is not None:
                self.device.pairing_config_factory = factory
            self.build_gatt()
            self.hook_att()
            if self.args.l2cap_psm:
                self.serve_l2cap()
            self.device.on("connection", self.on_connection)
            self.device.on("characteristic_subscription", self.on_subscription)
            try:
                await asyncio.wait_for(self.device.power_on(), self.args.timeout)
            except Exception as err:  # noqa: BLE001
                emit("error", message="power-on through %s failed: %r" % (self.args.endpoint, err))
                return 1
            for role, ch in self.chars.items():
                self.role_by_handle[ch.handle] = role
            emit("ready", name=self.args.name, service=SERVICE_UUID,
                 characteristics={role: {"uuid": uuid_text(ch.uuid), "handle": ch.handle} for role, ch in self.chars.items()},
                 **address_fields(self.device.random_address))
            await self.advertise()
            self.watch_stdin()
            transport_lost = getattr(transport.source, "terminated", None) or loop.create_future()
            done, _ = await asyncio.wait([self.stop, transport_lost], return_when=asyncio.FIRST_COMPLETED)
            if transport_lost in done:
                emit("error", message="the controller at %s closed the connection" % self.args.endpoint)
                return 1
            for connection in list(self.connections):
                try:
                    await asyncio.wait_for(connection.disconnect(), 2.0)
                except Exception:  # noqa: BLE001
                    pass
        return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("endpoint")
    ap.add_argument("--name", default="BumblePeriph", help="complete local name (scan response)")
    ap.add_argument("--address", default="F0:B1:E1:00:00:01", help="random static address to advertise from")
    ap.add_argument("--interval", type=float, default=100.0, help="advertising interval in ms (100)")
    ap.add_argument("--echo", action="store_true", help="notify every accepted write back on NOTIFY_UUID")
    ap.add_argument("--notify-on-subscribe", metavar="VALUE", help="notify VALUE once a client subscribes")
    ap.add_argument("--lenient", action="store_true", help="let Bumble accept any write opcode on any characteristic")
    ap.add_argument("--once", action="store_true", help="exit after the first disconnection")
    ap.add_argument("--att-log", action="store_true", help="log every ATT PDU received")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds allowed for power-on (10)")
    ap.add_argument("--secret", metavar="VALUE", help="serve B1E1AB04-… with VALUE, readable only on an encrypted link")
    ap.add_argument("--l2cap-psm", type=lambda v: int(v, 0), default=0, help="serve LE credit based channels on PSM, echoing SDUs")
    ap.add_argument("--l2cap-mtu", type=int, default=2048, help="our MTU on those channels (2048)")
    ap.add_argument("--l2cap-mps", type=int, default=247, help="our MPS on those channels (247)")
    ap.add_argument("--l2cap-credits", type=int, default=8, help="the credits we grant (8)")
    ap.add_argument("--l2cap-disconnect-after", type=int, default=0, metavar="N",
                    help="disconnect a channel once N SDUs were echoed on it")
    add_pairing_arguments(ap)
    args = ap.parse_args(argv)
    try:
        bumble_transport_spec(args.endpoint)
    except ValueError as err:
        ap.error(str(err))
    return asyncio.run(Peripheral(args).run())


if __name__ == "__main__":
    sys.exit(main())
