#!/usr/bin/env python3
"""A Bumble Device as a GATT central: scan, connect, discover, subscribe, write, log as JSON lines.

    bumble_central.py ENDPOINT --target ADDRESS|NAME [--write UUID:MODE:VALUE ...] [--subscribe UUID ...]
                      [--read UUID ...] [--expect-notifications N] [--mtu N] [--timeout S] [--legacy-scan]
                      [--snoop FILE]

ENDPOINT is the controller's H4 socket: tcp:HOST:PORT, HOST:PORT or unix:PATH. Run it with the
venv's Python. --target is a BD_ADDR (AA:BB:CC:DD:EE:FF, either address type matches) or the
local name in the advertising data or the scan response.

Defaults (the interop layout of tools/bumble_common.py, served by bumble_peripheral.py):
    --write B1E1AB01-…:request:text:hello   (Write Request to the write-only characteristic)
    --write B1E1AB02-…:command:text:hello   (Write Command to the write-without-response one)
    --subscribe B1E1AB03-…                  (enable notifications on the notify characteristic)
--read reads each characteristic after subscribing, before the writes. --snoop writes Bumble's own
btsnoop capture of its HCI (bumble.snoop.BtSnooper) to FILE.
MODE is request (ATT Write Request, 0x12), command (ATT Write Command, 0x52) or auto (request if
the characteristic has the write property, else command: what most apps do). Writes go in the
order given, after subscribing. --no-defaults drops the default writes and subscription.
VALUE: text:hello, hex:68656c6c6f, 0x68656c6c6f, or plain text.

stdout: one JSON object per line, {"t": seconds, "event": NAME, ...}:
    ready          address, address_type
    scanning       legacy (bool)
    found          address, address_type, name, rssi, connectable
    connected      peer_address, peer_address_type, handle
    mtu            mtu
    discovered     services: [{uuid, characteristics: [{uuid, handle, properties: [...]}]}]
    subscribed     characteristic
    read           characteristic, value_hex, value_text
    write          characteristic, mode, opcode ("0x12"/"0x52", as sent on ATT), op, value_hex,
                   value_text, ok (bool), error (when refused: the ATT error)
    notification   characteristic, handle, value_hex, value_text
    disconnected   reason
    done           ok, writes, notifications, error (when not ok)
    error          message
L2CAP: --l2cap-psm PSM skips GATT: it opens an LE credit based channel (Core 5.4 Vol 3 Part A
4.22) to PSM with --l2cap-mtu, --l2cap-mps and --l2cap-credits, sends one SDU per --l2cap-sdu N
(N octets, octet i = (7 i + N) mod 256), each once the peer has echoed the one before (Bumble's
write() packs queued data into SDUs up to the peer's MTU), then disconnects the channel and the link. Events: l2cap-open (cid, peer_cid, peer_mtu, peer_mps, credits: what the
peer granted), l2cap-sdu (length, head_hex, matches: the echo equals what was sent),
l2cap-refused (error), l2cap-closed.
With --pairing IO (and --legacy, --mitm, --no-bonding, --passkey N, --reject, as
bumble_peripheral.py has them) and --pair-first it pairs right after connecting and logs
"paired" (encrypted) or "pair-failed", plus pairing, pairing-failure and encryption events.
Exit status: 0 when every step worked (and N notifications arrived), 1 otherwise, 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bumble_common import (WRITE_UUID, WWR_UUID, NOTIFY_UUID, ATT_OPCODES, emit,  # noqa: E402
                           bumble_transport_spec, parse_value, value_fields, address_fields, uuid_text, open_h4, properties_list,
                           add_pairing_arguments, pairing_config_factory, watch_pairing)

try:
    from bumble import hci, l2cap
    from bumble.core import AdvertisingData, UUID
    from bumble.device import Device, DeviceConfiguration, Peer
except ImportError as err:  # pragma: no cover
    sys.stderr.write("bumble_central: cannot import bumble (%s); use the venv's python (tools/setup-venv.sh)\n" % err)
    sys.exit(2)

ADDRESS_RE = re.compile(r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$")


class Failure(Exception):
    pass


ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def describe_error(err) -> str:
    """An ATT error as "ATT error 0x03 WRITE_NOT_PERMITTED"; anything else as its text."""
    code = getattr(err, "error_code", None)
    if isinstance(code, int):
        name = getattr(code, "name", None) or ""
        return ("ATT error 0x%02x %s" % (int(code), name)).strip()
    return ANSI_RE.sub("", str(err)) or type(err).__name__


def parse_write(spec: str):
    parts = spec.split(":", 2)
    if len(parts) != 3 or parts[1] not in ("request", "command", "auto"):
        raise ValueError("--write %r: use UUID:request|command|auto:VALUE" % spec)
    return UUID(parts[0]), parts[1], parse_value(parts[2])


class Central:
    def __init__(self, args):
        self.args = args
        self.sent_opcodes = []
        self.notifications = 0
        self.writes = []
        self.names = {}
        self.notified = None

    async def find_target(self, device):
        target = self.args.target
        by_address = bool(ADDRESS_RE.match(target))
        found = asyncio.get_running_loop().create_future()

        def on_advertisement(adv):
            key = adv.address.to_string(with_type_qualifier=False).upper()
            name = adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) or adv.data.get(AdvertisingData.SHORTENED_LOCAL_NAME)
            if isinstance(name, bytes):
                name = name.decode(errors="replace")
            if name:
                self.names[key] = name
            if found.done():
                return
            if (by_address and key == target.upper()) or (not by_address and self.names.get(key) == target):
                if adv.is_connectable or self.args.connect_anyway:
                    found.set_result(adv)

        device.on("advertisement", on_advertisement)
        await device.start_scanning(legacy=self.args.legacy_scan, active=True, filter_duplicates=False)
        emit("scanning", legacy=self.args.legacy_scan, target=target)
        try:
            adv = await asyncio.wait_for(found, self.args.scan_timeout)
        except asyncio.TimeoutError:
            raise Failure("no connectable advertiser matching %r within %.1f s" % (target, self.args.scan_timeout))
        finally:
            device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()
        key = adv.address.to_string(with_type_qualifier=False).upper()
        emit("found", name=self.names.get(key), rssi=adv.rssi, connectable=bool(adv.is_connectable),
             **address_fields(adv.address))
        return adv

    def hook_att(self, connection):
        client = connection.gatt_client
        original = client.send_gatt_pdu

        def send_gatt_pdu(pdu: bytes):
            if pdu:
                self.sent_opcodes.append(pdu[0])
            return original(pdu)

        client.send_gatt_pdu = send_gatt_pdu

    async def run_steps(self, device):
        args = self.args
        adv = await self.find_target(device)
        connection = await asyncio.wait_for(
            device.connect(adv.address, own_address_type=hci.OwnAddressType.RANDOM),
            args.connect_timeout)
        emit("connected", handle=connection.handle,
             **{"peer_" + k: v for k, v in address_fields(connection.peer_address).items()})
        disconnected = asyncio.get_running_loop().create_future()
        connection.on("disconnection", lambda reason: disconnected.done() or disconnected.set_result(int(reason)))
        self.hook_att(connection)
        watch_pairing(connection)
        if args.pairing is not None and args.pair_first:
            # Pairing Request, the method, encryption, key distribution (bumble.smp).
            try:
                await asyncio.wait_for(connection.pair(), args.step_timeout)
            except Exception as err:  # noqa: BLE001
                emit("pair-failed", error=repr(err))
                raise Failure("pairing failed: %r" % err)
            emit("paired", encrypted=bool(connection.encryption))
        if args.l2cap_psm:
            await self.l2cap_steps(device, connection)
        if args.connect_only or args.l2cap_psm:
            await connection.disconnect()
            emit("disconnected", reason=await asyncio.wait_for(disconnected, args.step_timeout))
            return
        peer = Peer(connection)
        if args.mtu:
            mtu = await peer.request_mtu(args.mtu)
            emit("mtu", mtu=mtu)
        await peer.discover_services()
        services = []
        for service in peer.services:
            await service.discover_characteristics()
            chars = []
            for ch in service.characteristics:
                chars.append({"uuid": uuid_text(ch.uuid), "handle": ch.handle, "properties": properties_list(int(ch.properties))})
            services.append({"uuid": uuid_text(service.uuid), "characteristics": chars})
        emit("discovered", services=services)

        def characteristic(uuid):
            found = peer.get_characteristics_by_uuid(uuid)
            if not found:
                raise Failure("the peer has no characteristic %s" % uuid)
            return found[0]

        self.notified = asyncio.get_running_loop().create_future()
        for uuid in args.subscribe:
            ch = characteristic(UUID(uuid))
            await ch.discover_descriptors()

            def on_value(value, ch=ch):
                self.notifications += 1
                emit("notification", characteristic=uuid_text(ch.uuid), handle=ch.handle, **value_fields(bytes(value)))
                if self.notifications >= args.expect_notifications and not self.notified.done():
                    self.notified.set_result(True)

            await ch.subscribe(on_value)
            emit("subscribed", characteristic=uuid_text(ch.uuid))

        for uuid in args.read:
            ch = characteristic(UUID(uuid))
            value = await asyncio.wait_for(ch.read_value(), args.step_timeout)
            emit("read", characteristic=uuid_text(ch.uuid), **value_fields(bytes(value)))

        for uuid, mode, value in args.write:
            ch = characteristic(uuid)
            props = int(ch.properties)
            if mode == "auto":
                mode = "request" if props & 0x08 else "command"
            before = len(self.sent_opcodes)
            record = {"characteristic": uuid_text(ch.uuid), "mode": mode, **value_fields(value)}
            try:
                await asyncio.wait_for(ch.write_value(value, with_response=(mode == "request")), args.step_timeout)
                ok, error = True, None
            except Exception as err:  # noqa: BLE001 - an ATT error or a time-out
                ok, error = False, describe_error(err)
            sent = [op for op in self.sent_opcodes[before:] if op in (0x12, 0x52, 0xD2)]
            opcode = sent[0] if sent else None
            record.update(opcode="0x%02x" % opcode if opcode is not None else None,
                          op=ATT_OPCODES.get(opcode) if opcode is not None else None, ok=ok)
            if error:
                record["error"] = error
            emit("write", **record)
            self.writes.append(record)

        if args.expect_notifications > 0 and self.notifications < args.expect_notifications:
            try:
                await asyncio.wait_for(asyncio.shield(self.notified), args.step_timeout)
            except asyncio.TimeoutError:
                raise Failure("%d notification(s) within %.1f s, expected %d"
                              % (self.notifications, args.step_timeout, args.expect_notifications))
        if args.listen > 0:
            await asyncio.sleep(args.listen)
        if not disconnected.done():
            await connection.disconnect()
            reason = await asyncio.wait_for(disconnected, args.step_timeout)
        else:
            reason = disconnected.result()
        emit("disconnected", reason=reason)
        failed = [w for w in self.writes if not w["ok"]]
        if failed and not args.allow_write_errors:
            raise Failure("%d write(s) failed: %s" % (len(failed), "; ".join(w.get("error", "") for w in failed)))

    async def l2cap_steps(self, device, connection):
        args = self.args
        spec = l2cap.LeCreditBasedChannelSpec(psm=args.l2cap_psm, mtu=args.l2cap_mtu, mps=args.l2cap_mps,
                                              max_credits=args.l2cap_credits)
        try:
            channel = await asyncio.wait_for(device.create_l2cap_channel(connection, spec), args.step_timeout)
        except Exception as err:  # noqa: BLE001 - a refusal (L2capError) or a time-out
            emit("l2cap-refused", error=describe_error(err))
            return
        emit("l2cap-open", cid=channel.source_cid, peer_cid=channel.destination_cid, peer_mtu=channel.peer_mtu,
             peer_mps=channel.peer_mps, credits=channel.credits)
        sdus = [bytes((7 * i + n) & 0xFF for i in range(n)) for n in args.l2cap_sdu]
        received = []
        echo = None

        def on_sdu(sdu):
            sdu = bytes(sdu)
            expected = sdus[len(received)] if len(received) < len(sdus) else None
            received.append(sdu)
            emit("l2cap-sdu", length=len(sdu), head_hex=sdu[:16].hex(), matches=sdu == expected)
            if echo is not None and not echo.done():
                echo.set_result(True)

        channel.sink = on_sdu
        channel.on("close", lambda: emit("l2cap-closed", cid=channel.source_cid))
        # One SDU at a time: Bumble's channel.write() is a byte stream that packs whatever is
        # queued into SDUs of up to the peer's MTU, so queued writes would not keep their bounds.
        for sdu in sdus:
            echo = asyncio.get_running_loop().create_future()
            channel.write(sdu)
            try:
                await asyncio.wait_for(echo, args.step_timeout)
            except asyncio.TimeoutError:
                raise Failure("%d of %d SDUs echoed within %.1f s" % (len(received), len(sdus), args.step_timeout))
        await asyncio.wait_for(channel.disconnect(), args.step_timeout)

    async def run(self):
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result(s))
        spec = bumble_transport_spec(self.args.endpoint)
        try:
            transport = await open_h4(self.args.endpoint)
        except Exception as err:  # noqa: BLE001
            emit("error", message="cannot open %s (%s): %s" % (self.args.endpoint, spec, err))
            emit("done", ok=False, error="cannot open %s" % self.args.endpoint)
            return 2
        if self.args.snoop:
            from contextlib import nullcontext
            from bumble.snoop import BtSnooper
            from bumble.transport.common import SnoopingTransport
            snoop_file = open(self.args.snoop, "wb")
            transport = SnoopingTransport.create_with(transport, nullcontext(BtSnooper(snoop_file)))
            try:
                return await self.run_on(transport, loop, stop)
            finally:
                snoop_file.close()
        return await self.run_on(transport, loop, stop)

    async def run_on(self, transport, loop, stop):
        async with transport:
            config = DeviceConfiguration()
            config.name = self.args.name
            config.address = hci.Address(self.args.address)
            device = Device.from_config_with_hci(config, transport.source, transport.sink)
            factory = pairing_config_factory(self.args)
            if factory is not None:
                device.pairing_config_factory = factory
            try:
                await asyncio.wait_for(device.power_on(), self.args.step_timeout)
                emit("ready", **address_fields(device.random_address))
                steps = loop.create_task(self.run_steps(device))
                lost = getattr(transport.source, "terminated", None) or loop.create_future()
                done, _ = await asyncio.wait([steps, stop, lost], timeout=self.args.timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
                if steps not in done:
                    steps.cancel()
                    if stop in done:
                        raise Failure("interrupted")
                    if lost in done:
                        raise Failure("the controller at %s closed the connection" % self.args.endpoint)
                    raise Failure("not finished within %.1f s" % self.args.timeout)
                steps.result()
            except Failure as err:
                emit("done", ok=False, error=str(err), writes=len(self.writes), notifications=self.notifications)
                return 1
            except Exception as err:  # noqa: BLE001
                emit("done", ok=False, error=repr(err), writes=len(self.writes), notifications=self.notifications)
                return 1
        emit("done", ok=True, writes=len(self.writes), notifications=self.notifications)
        return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("endpoint")
    ap.add_argument("--target", required=True, help="BD_ADDR or local name of the peripheral")
    ap.add_argument("--write", action="append", default=None, metavar="UUID:MODE:VALUE")
    ap.add_argument("--subscribe", action="append", default=None, metavar="UUID")
    ap.add_argument("--no-defaults", action="store_true", help="no default writes or subscription")
    ap.add_argument("--expect-notifications", type=int, default=0, metavar="N",
                    help="wait (up to --step-timeout) until N notifications arrived")
    ap.add_argument("--listen", type=float, default=0.0, help="seconds to stay connected after the writes")
    ap.add_argument("--mtu", type=int, default=0, help="send Exchange MTU with this MTU first")
    ap.add_argument("--read", action="append", default=[], metavar="UUID", help="read this characteristic (after subscribing)")
    ap.add_argument("--snoop", default=None, metavar="FILE", help="write Bumble's btsnoop capture of its HCI to FILE")
    ap.add_argument("--allow-write-errors", action="store_true", help="a refused write is logged, not a failure")
    ap.add_argument("--connect-only", action="store_true", help="scan, connect, disconnect: no GATT")
    ap.add_argument("--connect-anyway", action="store_true", help="try to connect to a non-connectable advertiser")
    ap.add_argument("--legacy-scan", action="store_true", help="use legacy scanning commands even when extended exist")
    ap.add_argument("--name", default="BumbleCentral")
    ap.add_argument("--address", default="F0:B1:E1:00:00:02", help="our random static address")
    ap.add_argument("--scan-timeout", type=float, default=10.0)
    ap.add_argument("--connect-timeout", type=float, default=10.0)
    ap.add_argument("--step-timeout", type=float, default=10.0)
    ap.add_argument("--timeout", type=float, default=60.0, help="the whole run (60 s)")
    ap.add_argument("--pair-first", action="store_true", help="pair right after connecting (with --pairing IO)")
    ap.add_argument("--l2cap-psm", type=lambda v: int(v, 0), default=0, help="open an LE credit based channel to PSM (no GATT)")
    ap.add_argument("--l2cap-sdu", type=int, action="append", default=[], metavar="N", help="send an SDU of N octets (repeatable)")
    ap.add_argument("--l2cap-mtu", type=int, default=2048, help="our MTU on the channel (2048)")
    ap.add_argument("--l2cap-mps", type=int, default=247, help="our MPS on the channel (247)")
    ap.add_argument("--l2cap-credits", type=int, default=8, help="the credits we grant (8)")
    add_pairing_arguments(ap)
    args = ap.parse_args(argv)
    try:
        bumble_transport_spec(args.endpoint)
        writes = args.write if args.write is not None else (
            [] if args.no_defaults else [WRITE_UUID + ":request:text:hello", WWR_UUID + ":command:text:hello"])
        args.write = [parse_write(w) for w in writes]
    except ValueError as err:
        ap.error(str(err))
    if args.subscribe is None:
        args.subscribe = [] if args.no_defaults else [NOTIFY_UUID]
    return asyncio.run(Central(args).run())


if __name__ == "__main__":
    sys.exit(main())
