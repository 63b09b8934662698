#!/usr/bin/env python3
"""Start N Bumble controllers on one LocalLink, each served as an H4 endpoint.

    bumble_controllers.py N [--base-port P | --unix-dir DIR] [--host 127.0.0.1] [--stock]

Run it with the venv's Python (tools/setup-venv.sh makes it; bumble is pinned there).

stdout carries only what a parent process needs, one JSON object per line, then nothing more:
    {"event": "listening", "index": 0, "endpoint": "tcp:127.0.0.1:41234", "address": "C0:DE:00:00:00:01"}
    ... one per controller ...
    {"event": "ready", "count": N, "pid": 1234, "mode": "lab"}
Logs (connections, errors) go to stderr: send it to a file, not to a pipe nobody reads.
SIGTERM or SIGINT: closes every connection and server, removes the unix socket files, exits 0.

Endpoints:
    --base-port P     TCP servers on HOST:P, HOST:P+1, ...; P = 0 (the default) lets the kernel
                      pick a free port for each, so parallel runs never collide
    --unix-dir DIR    unix stream sockets DIR/controller-I.sock (printed as unix:PATH)

Modes:
    lab (default)     each endpoint takes one host connection at a time, and every new connection
                      gets a fresh controller (same address): like RootCanal's "each connection is
                      a new controller". When the host goes away its links drop and the peers see
                      Disconnection Complete, reason 0x15 (remote power off). The controller is
                      Bumble's Controller with the fixes BLELab needs (LabController below; each is
                      listed with its evidence in docs/tiers.md).
    --stock           Bumble exactly as shipped: its Controller class on its own tcp-server: /
                      unix-server: transports (one controller per endpoint for the whole run,
                      whatever connects). Only the distinct public addresses are ours. For
                      comparison and for reporting Bumble's behaviour.

Other options:
    --address-prefix  public addresses are PREFIX:NN with NN = index + 1 (default C0:DE:00:00:00)
    --rssi            RSSI of advertising reports in lab mode (default -50, Bumble's constant)
    --die-with-parent the kernel sends us SIGTERM when the parent process dies (prctl), so a
                      parent killed with SIGKILL leaves nothing behind
    --log-level       Python logging level for stderr (default WARNING)
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import logging
import os
import signal
import socket
import sys

try:
    from bumble import hci, ll
    from bumble.controller import Controller, LegacyAdvertiser
    from bumble.link import LocalLink
    from bumble.transport.common import PacketParser
    from bumble import core
except ImportError as err:  # pragma: no cover - reported to the user
    sys.stderr.write("bumble_controllers: cannot import bumble (%s); run it with the venv's python: "
                     "tools/setup-venv.sh, then build/venv/bin/python %s\n" % (err, sys.argv[0]))
    sys.exit(2)

log = logging.getLogger("bumble_controllers")

ADV_IND, ADV_DIRECT_IND, ADV_SCAN_IND, ADV_NONCONN_IND = 0, 1, 2, 3
REPORT_SCAN_RSP = 4


# ---------------------------------------------------------------------------------------------
# Lab fixes to Bumble's controller (bumble 0.0.236). Each is described in docs/tiers.md.

class LabAdvInd(ll.AdvInd):
    """ADV_IND that also carries the advertiser's scan response (there is no SCAN_REQ on a LocalLink)."""

    def __init__(self, advertiser_address, data, scan_response):
        super().__init__(advertiser_address=advertiser_address, data=data)
        self.scan_response = scan_response


class LabAdvScanInd(ll.AdvNonConnInd):
    """ADV_SCAN_IND: scannable, not connectable. Bumble's ll module has no such PDU."""

    def __init__(self, advertiser_address, data, scan_response):
        super().__init__(advertiser_address=advertiser_address, data=data)
        self.scan_response = scan_response


class LabLegacyAdvertiser(LegacyAdvertiser):
    """Sends the PDU that matches the advertising type; Bumble's sends only ADV_IND, and nothing
    for ADV_SCAN_IND or ADV_NONCONN_IND. Interval in 0.625 ms units (Bumble reads it as ms)."""

    def _on_timer_fired(self) -> None:
        self.send_advertising_data()
        seconds = max(self.advertising_interval_min, 0x20) * 0.000625
        self.timer_handle = asyncio.get_running_loop().call_later(seconds, self._on_timer_fired)

    def send_advertising_data(self) -> None:
        if not self.enabled:
            return
        kind = self.advertising_type
        if kind == ADV_IND:
            pdu = LabAdvInd(self.address, self.advertising_data, self.scan_response_data)
        elif kind == ADV_SCAN_IND:
            pdu = LabAdvScanInd(self.address, self.advertising_data, self.scan_response_data)
        elif kind == ADV_NONCONN_IND:
            pdu = ll.AdvNonConnInd(advertiser_address=self.address, data=self.advertising_data)
        else:
            log.warning("advertising type %d is not emulated", kind)
            return
        self.controller.send_advertising_pdu(pdu)


class LabLink(LocalLink):
    """LocalLink whose LE ACL data carries the sender's address on that connection. Bumble's
    sends it from the controller's *random* address, so on a connection made with public
    addresses (BLELab's default) the receiver finds no connection and drops every packet."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport != core.PhysicalTransport.LE:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        connection = sender_controller.le_connections.get(destination_address)
        destination = self.find_le_controller(destination_address)
        if connection is None or destination is None:
            log.warning("%s: LE data to %s, which is not connected", sender_controller.name, destination_address)
            return
        source = connection.self_address
        asyncio.get_running_loop().call_soon(
            lambda: destination.on_link_acl_data(source, transport, data))


class LabController(Controller):
    """Bumble's Controller, with what BLELab's legacy host needs:
    - legacy LE Advertising Reports (Bumble sends Extended Advertising Reports, whatever command
      the host used, as long as it claims the LE Extended Advertising feature: we clear it);
    - advertising types ADV_IND, ADV_SCAN_IND and ADV_NONCONN_IND, reported with their own event
      types; a scan response report (type 4) with the scan response data, to active scanners of
      scannable advertising only (Bumble reports type 4 with the advertising data, to everyone);
    - only a connectable advertiser accepts a connection;
    - the peripheral's LE Connection Complete carries the connection's real parameters (Bumble:
      interval 10, timeout 10, marked FIXME);
    - LE Create Connection Cancel cancels and raises LE Connection Complete with status 0x02
      (Bumble: answers success, keeps the attempt pending, raises nothing);
    - Read RSSI answers (Bumble lists it as supported, then answers Unknown HCI Command);
    - Disconnect: the local host hears reason 0x16 (Bumble echoes the reason it sent);
    - HCI Reset resets (Bumble: a no-op): advertising and scanning off, a pending connection
      dropped, links dropped (the peer sees reason 0x08, as after a supervision timeout),
      event masks and random address back to their defaults.
    """

    def __init__(self, *args, rssi: int = -50, **kwargs):
        super().__init__(*args, **kwargs)
        self.le_features = self.le_features & ~hci.LeFeatureMask.LE_EXTENDED_ADVERTISING
        self.le_legacy_advertiser = LabLegacyAdvertiser(self)
        self.report_rssi = rssi
        self._connect_ind = None

    # -- events to the host
    def send_hci_packet(self, packet) -> None:
        ind = self._connect_ind
        if ind is not None and isinstance(packet, hci.HCI_LE_Connection_Complete_Event) \
                and packet.role == hci.Role.PERIPHERAL:
            self._connect_ind = None
            packet = hci.HCI_LE_Connection_Complete_Event(
                status=packet.status, connection_handle=packet.connection_handle, role=packet.role,
                peer_address_type=packet.peer_address_type, peer_address=packet.peer_address,
                connection_interval=ind.interval, peripheral_latency=ind.latency,
                supervision_timeout=ind.timeout, central_clock_accuracy=0)
        super().send_hci_packet(packet)

    # -- advertising and scanning on the link
    def on_ll_advertising_pdu(self, packet) -> None:
        if isinstance(packet, ll.ConnectInd):
            return self.on_le_connect_ind(packet)
        if isinstance(packet, ll.AdvExtInd):
            return self.on_advertising_pdu(packet)
        if isinstance(packet, LabAdvInd):
            kind = ADV_IND
        elif isinstance(packet, LabAdvScanInd):
            kind = ADV_SCAN_IND
        elif isinstance(packet, ll.AdvNonConnInd):
            kind = ADV_NONCONN_IND
        elif isinstance(packet, ll.AdvInd):  # a stock controller on the same link
            kind = ADV_IND
        else:
            return
        if self.le_scan_enable:
            reports = [hci.HCI_LE_Advertising_Report_Event.Report(
                event_type=kind, address_type=packet.advertiser_address.address_type,
                address=packet.advertiser_address, data=packet.data, rssi=self.report_rssi)]
            if self.le_scan_type == 1 and kind in (ADV_IND, ADV_SCAN_IND):
                reports.append(hci.HCI_LE_Advertising_Report_Event.Report(
                    event_type=REPORT_SCAN_RSP, address_type=packet.advertiser_address.address_type,
                    address=packet.advertiser_address, data=getattr(packet, "scan_response", b"") or b"",
                    rssi=self.report_rssi))
            for report in reports:
                self.send_hci_packet(hci.HCI_LE_Advertising_Report_Event([report]))
        pending = self.pending_le_connection
        if kind == ADV_IND and pending and pending.peer_address == packet.advertiser_address:
            self.create_le_connection(packet.advertiser_address)

    def on_le_connect_ind(self, packet) -> None:
        adv = self.le_legacy_advertiser
        if adv.enabled and adv.address == packet.advertiser_address and adv.advertising_type != ADV_IND:
            return  # a non-connectable advertiser ignores CONNECT_IND
        self._connect_ind = packet
        super().on_le_connect_ind(packet)
        self._connect_ind = None

    # -- commands
    def on_hci_le_create_connection_cancel_command(self, command):
        pending = self.pending_le_connection
        if pending is None:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None
        event = hci.HCI_LE_Connection_Complete_Event(
            status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, connection_handle=0,
            role=hci.Role.CENTRAL, peer_address_type=pending.peer_address_type,
            peer_address=pending.peer_address, connection_interval=0, peripheral_latency=0,
            supervision_timeout=0, central_clock_accuracy=0)
        # After the Command Complete (queued when this handler returns).
        asyncio.get_running_loop().call_soon(self.send_hci_packet, event)
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def on_hci_disconnect_command(self, command):
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None:
            return super().on_hci_disconnect_command(command)
        self._send_hci_command_status(hci.HCI_COMMAND_STATUS_PENDING, command.op_code)
        connection.send_ll_control_pdu(ll.TerminateInd(command.reason))
        # Vol 4 Part E 7.1.6: the local host hears 0x16; the peer, the reason given.
        self.on_le_disconnected(connection, hci.HCI_ErrorCode.CONNECTION_TERMINATED_BY_LOCAL_HOST_ERROR)
        return None

    def on_hci_read_rssi_command(self, command):
        # Bumble lists Read RSSI as supported but has no handler (Unknown HCI Command).
        if self.find_connection_by_handle(command.handle) is None:
            return hci.HCI_Read_RSSI_ReturnParameters(
                status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, handle=command.handle, rssi=0)
        return hci.HCI_Read_RSSI_ReturnParameters(status=hci.HCI_ErrorCode.SUCCESS, handle=command.handle,
                                                  rssi=self.report_rssi)

    def on_hci_reset_command(self, command):
        self.power_off(reason=hci.HCI_ErrorCode.CONNECTION_TIMEOUT_ERROR)
        self.event_mask = 0
        self.le_event_mask = 0
        self.random_address = hci.Address("00:00:00:00:00:00")
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def power_off(self, reason: int) -> None:
        """Stops advertising, scanning and initiating, and drops every LE link: each peer hears
        LL_TERMINATE_IND with `reason`; our own host hears nothing (it is gone or resetting)."""
        self.le_legacy_advertiser.stop()
        self.le_legacy_advertiser = LabLegacyAdvertiser(self)
        for adv_set in list(self.advertising_sets.values()):
            try:
                adv_set.stop()
            except Exception:  # noqa: BLE001 - best effort
                pass
        self.le_scan_enable = False
        self.pending_le_connection = None
        for peer, connection in list(self.le_connections.items()):
            try:
                connection.send_ll_control_pdu(ll.TerminateInd(reason))
            except Exception as err:  # noqa: BLE001 - the peer may be gone already
                log.info("%s: could not tell %s about the drop: %s", self.name, peer, err)
            self.le_connections.pop(peer, None)


# ---------------------------------------------------------------------------------------------
# Lab mode: our own servers, one host connection per endpoint, a fresh controller per connection

class HostConnection(asyncio.Protocol):
    def __init__(self, endpoint: "Endpoint"):
        self.endpoint = endpoint
        self.transport = None
        self.controller = None
        self.parser = None

    def connection_made(self, transport):
        ep = self.endpoint
        self.transport = transport
        if ep.active is not None and ep.active.peer_has_left():
            # The previous host closed its socket, but asyncio has not read the end of its stream
            # yet (a lab that closes one connection and opens the next at once is accepted in the
            # same loop turn): retire that controller first, as connection_lost would.
            ep.active.connection_lost(None)
        if ep.active is not None:
            log.warning("%s: refusing a second host connection (one controller, one host)", ep.endpoint)
            ep.stats_refused += 1
            transport.close()
            return
        ep.active = self
        ep.connections += 1
        self.controller = LabController(
            "C%d.%d" % (ep.index, ep.connections), host_source=None, host_sink=self, link=ep.link,
            public_address=ep.address, rssi=ep.rssi)
        self.parser = PacketParser(self.controller)
        log.info("%s: host connected (controller %s, %s)", ep.endpoint, self.controller.name, ep.address)

    def peer_has_left(self) -> bool:
        """True when the host's end of the socket is closed (end of stream or reset pending),
        looked at without consuming anything (MSG_PEEK)."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        try:
            peer = sock.dup()   # asyncio's wrapper has no recv; a duplicate descriptor does
        except OSError:
            return False
        try:
            return peer.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # ECONNRESET and the like: gone
            return True
        finally:
            peer.close()

    # Bumble's controller calls this with each packet for the host.
    def on_packet(self, packet: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(packet)

    def data_received(self, data):
        if self.parser is None:
            return
        try:
            self.parser.feed_data(data)
        except core.InvalidPacketError as err:
            log.error("%s: %s (bytes %s); closing the connection", self.endpoint.endpoint, err, data[:32].hex())
            self.transport.close()

    def connection_lost(self, exc):
        ep = self.endpoint
        if ep.active is self:
            ep.active = None
            c = self.controller
            c.power_off(reason=hci.HCI_ErrorCode.REMOTE_DEVICE_TERMINATED_CONNECTION_DUE_TO_POWER_OFF_ERROR)
            c.host = None
            try:
                ep.link.remove_controller(c)
            except KeyError:
                pass
            log.info("%s: host disconnected (%s)", ep.endpoint, exc or "closed")


class Endpoint:
    def __init__(self, index, link, address, rssi):
        self.index, self.link, self.address, self.rssi = index, link, address, rssi
        self.active = None
        self.connections = 0
        self.stats_refused = 0
        self.server = None
        self.endpoint = None
        self.path = None

    async def listen_tcp(self, host, port):
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: HostConnection(self), host, port)
        bound = self.server.sockets[0].getsockname()
        self.endpoint = "tcp:%s:%d" % (bound[0], bound[1])

    async def listen_unix(self, path):
        loop = asyncio.get_running_loop()
        self.path = path
        self.server = await loop.create_unix_server(lambda: HostConnection(self), path)
        self.endpoint = "unix:%s" % path

    def close(self):
        if self.active is not None and self.active.transport is not None:
            self.active.transport.close()
        if self.server is not None:
            self.server.close()


# ---------------------------------------------------------------------------------------------

def address_for(prefix: str, index: int) -> str:
    return "%s:%02X" % (prefix.upper(), index + 1)


def unix_path(directory: str, index: int) -> str:
    path = os.path.join(os.path.abspath(directory), "controller-%d.sock" % index)
    if len(path.encode()) > 107:
        raise SystemExit("bumble_controllers: unix socket path too long (%d bytes, at most 107): %s"
                         % (len(path.encode()), path))
    return path


def remove_stale(path: str):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


async def run(args) -> int:
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result(s))

    paths = []
    closers = []
    lines = []
    if args.unix_dir:
        os.makedirs(args.unix_dir, exist_ok=True)
    try:
        if args.stock:
            from bumble.transport import open_transport
            link = LocalLink()
            for i in range(args.count):
                if args.unix_dir:
                    path = unix_path(args.unix_dir, i)
                    remove_stale(path)
                    paths.append(path)
                    spec, endpoint = "unix-server:" + path, "unix:" + path
                    transport = await open_transport(spec)
                else:
                    port = args.base_port + i if args.base_port else 0
                    transport = await open_transport("tcp-server:%s:%d" % (args.host, port))
                    bound = transport.server.sockets[0].getsockname()
                    endpoint = "tcp:%s:%d" % (bound[0], bound[1])
                closers.append(transport.close)
                address = address_for(args.address_prefix, i)
                Controller("C%d" % i, host_source=transport.source, host_sink=transport.sink,
                           link=link, public_address=address)
                lines.append({"event": "listening", "index": i, "endpoint": endpoint, "address": address})
        else:
            link = LabLink()
            for i in range(args.count):
                ep = Endpoint(i, link, address_for(args.address_prefix, i), args.rssi)
                if args.unix_dir:
                    path = unix_path(args.unix_dir, i)
                    remove_stale(path)
                    paths.append(path)
                    await ep.listen_unix(path)
                else:
                    await ep.listen_tcp(args.host, args.base_port + i if args.base_port else 0)
                closers.append(ep.close)
                lines.append({"event": "listening", "index": i, "endpoint": ep.endpoint, "address": ep.address})
    except OSError as err:
        sys.stderr.write("bumble_controllers: cannot listen: %s\n" % err)
        for close in closers:
            result = close()
            if asyncio.iscoroutine(result):
                await result
        for path in paths:
            remove_stale(path)
        return 1

    for line in lines:
        print(json.dumps(line), flush=True)
    print(json.dumps({"event": "ready", "count": args.count, "pid": os.getpid(),
                      "mode": "stock" if args.stock else "lab"}), flush=True)

    sig = await stop
    log.info("signal %d: shutting down", sig)
    for close in closers:
        result = close()
        if asyncio.iscoroutine(result):
            await result
    await asyncio.sleep(0)
    for path in paths:
        remove_stale(path)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("count", type=int, help="how many controllers (endpoints)")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--base-port", type=int, default=0, help="first TCP port; 0 = any free port (default)")
    where.add_argument("--unix-dir", help="serve unix sockets DIR/controller-I.sock instead of TCP")
    ap.add_argument("--host", default="127.0.0.1", help="TCP address to listen on (default 127.0.0.1)")
    ap.add_argument("--stock", action="store_true", help="Bumble's Controller and transports, unmodified")
    ap.add_argument("--address-prefix", default="C0:DE:00:00:00", help="first five octets of the public addresses")
    ap.add_argument("--rssi", type=int, default=-50, help="RSSI in advertising reports (lab mode; default -50)")
    ap.add_argument("--die-with-parent", action="store_true", help="exit when the parent process dies (Linux)")
    ap.add_argument("--log-level", default=os.environ.get("BUMBLE_LOGLEVEL", "WARNING"))
    args = ap.parse_args(argv)
    if args.count < 1:
        ap.error("count must be at least 1")
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.die_with_parent and sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before prctl
            return 1
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
