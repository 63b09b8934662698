#!/usr/bin/env python3
"""A hostile peer for BLELab's host: Bumble on RootCanal sending malformed and out-of-order
L2CAP, LE signaling, SMP and ATT for N seeded rounds, against `blelab hostile` in both roles.

    hostile_peer.py --blelab PATH [--role peripheral|central|both] [--rounds N] [--seed S]
                    [--first-round R] [--out DIR] [--venv DIR] [--log-dir DIR]

Run it with the venv's Python (make venv; `make hostile` does all of this). For each role it
starts RootCanal 1.10.0 (every port free), starts `blelab hostile --role ROLE --transport
rootcanal:127.0.0.1:PORT` on it, opens a Bumble device on the same RootCanal (a second controller
on the same LE phy) and runs the rounds:

- BLELab as peripheral (GATT server): the hostile central connects, sends a seeded mix of 3–8
  actions (tools/hostile_actions.py: L2CAP frames whose Length disagrees with the ACL payload,
  fragments that never complete, continuations without a start, unknown CIDs, PB 0b11, signaling
  commands with bad lengths, unknown codes, over MTU_sig, identifier 0, out-of-range or misdirected
  Connection Parameter Update Requests, responses to nothing, SMP requests with bad fields or
  lengths, commands out of sequence, reserved codes, ATT PDUs malformed, empty, unsolicited,
  notifications and indications for unknown handles, unknown opcodes, Signed Write Commands,
  handle 0x0000 and backwards ranges, repeated Exchange MTU, pipelined requests, with benign
  traffic mixed in), checks each answer BLELab must send (Command Reject, Pairing Failed, Error
  Response, …), probes that BLELab's ATT server still answers (Read By Type of the Device Name
  within 5 s), sometimes leaves a fragment dangling, and disconnects; one round in seven ends
  early instead, right after an action, without waiting for its answer.
- BLELab as central (GATT client): the hostile peripheral advertises; BLELab connects and runs
  its GATT script (MTU, discovery, reads, writes, subscriptions, then a read of the Device Name
  by UUID, its sign of being done) while the peripheral answers some requests wrongly (malformed
  responses, responses of the wrong kind); then the same mix of actions, the probe, disconnect.
  One round in eight is cut by a disconnection in the middle of the script.

Every violation sent is expected in BLELab's report, typed (layer, kind, answer) and in order,
for that connection; every report must have been expected. A round that does not end within its
bounds is a hang (BLELab stopped answering, connecting or reporting); `blelab` ending other than
by `quit` with status 0 is a crash. Figures, one per line:

    hostile_rounds: N            hostile_violations_sent: N       hostile_answers_wrong: 0
    hostile_crashes: 0           hostile_violations_reported: N   hostile_reports_unexpected: 0
    hostile_hangs: 0             hostile_violations_unreported: 0 hostile_links_lost: 0 …

A pipelined request is answered by BLELab ending the link (Remote User Terminated Connection,
0x13, as BlueZ does): that round ends there, counted in `links_dropped`, and the next one runs on
a new connection. A link that goes down in the middle of a round otherwise, not by our doing, is
`links_lost` (BLELab disconnecting on its own; a crash when blelab has exited). Exit status 0
when there was no crash, hang, lost link, unreported violation, unexpected report or wrong
answer; 1 otherwise (each named, with the line that reproduces its round); 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from procs import StartError, start_rootcanal  # noqa: E402
from hostile_actions import (ATT, SIG, SMP, READ_DEVICE_NAME, actions_for, att_opcode, l2cap,  # noqa: E402
                             tampered_response)

try:
    from bumble import hci
    from bumble.core import UUID
    from bumble.device import ConnectionParametersPreferences, Device, DeviceConfiguration
    from bumble.gatt import Characteristic, CharacteristicValue, Service
    from bumble_common import NOTIFY_UUID, SERVICE_UUID, WRITE_UUID, WWR_UUID, open_h4
except ImportError as err:  # pragma: no cover
    sys.stderr.write("hostile_peer: cannot import bumble (%s); run it with the venv's python (make venv)\n" % err)
    sys.exit(2)

BLELAB_ADDRESS = "C0:B1:E1:00:00:01"     # blelab hostile's default random static address
PEER_ADDRESS = "F0:B1:E1:00:00:42"       # the hostile device's random static address
ANSWER_TIMEOUT = 3.0                     # for each answer BLELab owes
PROBE_TIMEOUT = 5.0
CONNECT_TIMEOUT = 15.0
REPORT_TIMEOUT = 5.0                     # for BLELab's own account of a connection or disconnection
SCRIPT_TIMEOUT = 20.0                    # BLELab's GATT script, as central
ROUND_TIMEOUT = 45.0
EXIT_TIMEOUT = 10.0


class Hang(Exception):
    """BLELab stopped answering, connecting or reporting within a bound."""


class Crash(Exception):
    """The blelab process ended by itself."""


class LinkLost(Exception):
    """The link went down in the middle of a round, and not by our doing."""


def log(text: str):
    sys.stderr.write("hostile: %s\n" % text)
    sys.stderr.flush()


# ------------------------------------------------------------------------------------------------
# blelab hostile, as a child process

class BLELab:
    def __init__(self, argv: list, stderr_path: str):
        self.argv, self.stderr_path = argv, stderr_path
        self.events = []
        self.changed = asyncio.Event()
        self.proc = None
        self.quitting = False

    async def start(self):
        self.stderr = open(self.stderr_path, "wb")
        self.proc = await asyncio.create_subprocess_exec(*self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                         stderr=self.stderr, start_new_session=True)
        self.reader = asyncio.get_running_loop().create_task(self.read())

    async def read(self):
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.events.append({"event": "garbage", "line": line.decode(errors="replace")})
            self.changed.set()
        await self.proc.wait()
        self.changed.set()

    def exited(self):
        return self.proc.returncode

    def check_alive(self):
        if self.proc.returncode is not None and not self.quitting:
            raise Crash("blelab exited by itself with %s\n%s" % (describe_status(self.proc.returncode), self.stderr_tail()))

    async def wait_for(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if predicate(event):
                    return event
            self.check_alive()
            left = deadline - time.monotonic()
            if left <= 0:
                raise Hang("no %s from blelab within %.1f s" % (what, timeout))
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    def violations(self, connection: int) -> list:
        return [e for e in self.events if e.get("event") == "violation" and e.get("connection") == connection]

    def unattributed(self) -> list:
        return [e for e in self.events if e.get("event") == "violation" and e.get("connection") is None]

    async def quit(self):
        """Asks it to stop; returns its exit status (None: it did not exit in time and was killed)."""
        self.quitting = True
        if self.proc.returncode is None:
            try:
                self.proc.stdin.write(b"quit\n")
                await self.proc.stdin.drain()
                self.proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass
        try:
            await asyncio.wait_for(self.proc.wait(), EXIT_TIMEOUT)
            await asyncio.wait_for(self.reader, 2.0)
            return self.proc.returncode
        except asyncio.TimeoutError:
            self.kill()
            await self.proc.wait()
            return None

    def kill(self):
        if self.proc and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stderr_tail(self, lines: int = 15) -> str:
        try:
            with open(self.stderr_path, errors="replace") as f:
                return "\n".join("  | " + l for l in f.read().splitlines()[-lines:])
        except OSError:
            return ""


def describe_status(code) -> str:
    if code is None:
        return "no exit"
    if code < 0:
        try:
            return "signal %d (%s)" % (-code, signal.Signals(-code).name)
        except ValueError:
            return "signal %d" % -code
    return "status %d" % code


# ------------------------------------------------------------------------------------------------
# The hostile Bumble device

class Peer:
    """A Bumble device whose L2CAP input from BLELab is recorded (and, for signaling and SMP,
    kept from Bumble's own layers, which would answer it)."""

    def __init__(self, device, blelab_role: str):
        self.device = device
        self.blelab_role = blelab_role
        self.received = []               # (handle, cid, pdu) from BLELab, in order
        self.changed = asyncio.Event()
        self.round = None
        manager = device.l2cap_channel_manager
        original = manager.on_pdu

        def on_pdu(connection, cid, pdu):
            pdu = bytes(pdu)
            self.received.append((connection.handle, cid, pdu))
            self.changed.set()
            if cid in (SIG, SMP):
                return
            if cid == ATT:
                if blelab_role == "peripheral":
                    return               # the hostile central runs ATT by hand
                if not pdu or pdu[0] & 1 or pdu[0] == 0x1E:
                    return               # answers to our own requests and indications: not for Bumble
            original(connection, cid, pdu)

        manager.on_pdu = on_pdu

    def queue(self, handle):
        return self.device.host.connections[handle].acl_packet_queue


class Round:
    """One connection's worth of hostility: the context tools/hostile_actions.py acts through."""

    def __init__(self, peer: Peer, connection, rng: random.Random, blelab_role: str, number: int):
        self.peer, self.connection, self.rng = peer, connection, rng
        self.handle = connection.handle
        self.blelab_role, self.number = blelab_role, number
        self.expected = []               # (layer, kind, answer, action)
        self.failures = []               # wrong or missing answers
        self.consumed = set()            # indices of peer.received matched by an answer
        self.start = len(peer.received)
        self.no_wait = False
        self.is_up = lambda: True
        self.action = None
        self.actions = []
        self.benign = 0
        self.ident = rng.randint(1, 255)
        self.tampered = 0
        # What the round knows of BLELab's ATT_MTU: 23 until an exchange (Vol 3 Part F 3.2.8);
        # BLELab's Server Rx MTU; the Exchange MTU Requests its server answered on this link.
        self.att_mtu = 23
        self.server_rx_mtu = 23
        self.mtu_requests = 0
        # Set when BLELab ended the link as an action expected (`dropped`): the round ends there.
        self.disconnected = None
        self.dropped_as_expected = False
        # Answers made wrong come from a stream of their own, so the plan drawn after them does
        # not depend on how many answers the script needed.
        self.tamper_rng = random.Random("%d:%d:tamper" % (rng.getrandbits(32), number))

    # the interface of hostile_actions.py
    def linked(self) -> bool:
        return self.is_up() and self.handle in self.peer.device.host.connections

    def send(self, cid: int, payload: bytes):
        if self.linked():
            self.peer.device.host.send_l2cap_pdu(self.handle, cid, payload)

    def raw(self, pb: int, data: bytes):
        if not self.linked():
            return
        packet = hci.HCI_AclDataPacket(connection_handle=self.handle, pb_flag=pb, bc_flag=0,
                                       data_total_length=len(data), data=data)
        self.peer.queue(self.handle).enqueue(packet, self.handle)

    def expect(self, layer: str, kind: str, answer: str):
        self.expected.append((layer, kind, answer, self.action))

    def next_id(self) -> int:
        self.ident = self.ident % 255 + 1
        return self.ident

    def unknown_handle(self) -> int:
        return self.rng.randint(0xF000, 0xFFFE)

    async def answer(self, matcher, what: str, timeout: float = ANSWER_TIMEOUT):
        if self.no_wait:
            return None
        deadline = time.monotonic() + timeout
        while True:
            for i in range(self.start, len(self.peer.received)):
                handle, cid, pdu = self.peer.received[i]
                if handle == self.handle and i not in self.consumed and matcher(cid, pdu):
                    self.consumed.add(i)
                    return pdu
            left = deadline - time.monotonic()
            if left <= 0 or not self.is_up():
                self.failures.append("%s: no %s within %.1f s" % (self.action, what, timeout))
                return None
            self.peer.changed.clear()
            try:
                await asyncio.wait_for(self.peer.changed.wait(), min(left, 0.5))
            except asyncio.TimeoutError:
                pass

    def fail(self, text: str):
        self.failures.append("%s: %s" % (self.action, text))

    async def dropped(self, reason: int, what: str, timeout: float = ANSWER_TIMEOUT):
        """BLELab ends the link, as the action expects, with `reason` as this side hears it."""
        self.dropped_as_expected = True
        if self.no_wait:
            return
        try:
            got = await asyncio.wait_for(asyncio.shield(self.disconnected), timeout)
        except asyncio.TimeoutError:
            self.failures.append("%s: the link still up %.1f s later: %s expected" % (self.action, timeout, what))
            return
        if got != reason:
            self.failures.append("%s: the link dropped with reason 0x%02x, not 0x%02x (%s)" % (self.action, got, reason, what))

    async def probe(self):
        """BLELab's ATT server still answers: Read By Type of the Device Name."""
        self.action = "probe"
        self.send(ATT, READ_DEVICE_NAME)
        saved = self.failures[:]
        got = await self.answer(att_opcode(0x09), "probe answer", PROBE_TIMEOUT)
        if got is None:
            self.failures = saved
            if not self.is_up():
                return False
            raise Hang("BLELab's ATT server did not answer the probe (Read By Type of 0x2A00) within %.1f s" % PROBE_TIMEOUT)
        return True

    async def drain(self):
        if not self.linked():
            return
        queue = self.peer.queue(self.handle)
        try:
            await asyncio.wait_for(queue.drain(self.handle), 3.0)
        except (asyncio.TimeoutError, ValueError):
            pass

    def unanswered(self) -> list:
        """What BLELab sent on signaling or SMP (and ATT, as peripheral) that no action expected."""
        out = []
        for i in range(self.start, len(self.peer.received)):
            handle, cid, pdu = self.peer.received[i]
            if handle != self.handle or i in self.consumed:
                continue
            if cid in (SIG, SMP) or (cid == ATT and self.blelab_role == "peripheral"):
                out.append("cid 0x%04x: %s" % (cid, pdu.hex(" ")))
        return out


# ------------------------------------------------------------------------------------------------
# One role

class RoleRun:
    def __init__(self, role: str, args, endpoint: str, out_dir: str):
        self.role, self.args, self.endpoint, self.out_dir = role, args, endpoint, out_dir
        self.figures = collections.Counter()
        self.problems = []           # (round, text)
        self.rounds = []             # per-round records for the report
        self.connections = 0
        self.current_round = None
        self.server_rx_mtu = 23
        self.mtu_by_handle = {}          # BLELab's ATT_MTU after its own client's exchange, by link (as central)

    def reproduce(self, r) -> str:
        return "reproduce: build/venv/bin/python tools/hostile_peer.py --blelab %s --role %s --seed %d --first-round %d --rounds 1" % (
            self.args.blelab, self.role, self.args.seed, r)

    def problem(self, round_no, text):
        self.problems.append((round_no, text))
        log("%s round %s: %s" % (self.role, round_no, text.splitlines()[0]))

    async def run(self):
        args = self.args
        json_path = os.path.join(self.out_dir, "blelab-%s.json" % self.role)
        argv = [args.blelab, "hostile", "--role", self.role, "--transport", "rootcanal:" + self.endpoint.split(":", 1)[1],
                "--json", json_path]
        if self.role == "central":
            argv += ["--peer", PEER_ADDRESS + "/random"]
        self.blelab = BLELab(argv, os.path.join(args.log_dir, "blelab-hostile-%s.err" % self.role))
        await self.blelab.start()
        transport = None
        try:
            ready = await self.blelab.wait_for(lambda e: e.get("event") == "ready", 20.0, "ready line")
            self.server_rx_mtu = int(ready.get("att_mtu", 23))
            log("%s: blelab ready at %s on %s" % (self.role, ready.get("address"), ready.get("controller")))
            transport = await open_h4(self.endpoint)
            config = DeviceConfiguration()
            config.name = "HostilePeer"
            config.address = hci.Address(PEER_ADDRESS)
            device = Device.from_config_with_hci(config, transport.source, transport.sink)
            self.peer = Peer(device, self.role)
            if self.role == "peripheral":
                await device.power_on()
                await self.as_central(device)
            else:
                self.build_gatt(device)
                await device.power_on()
                await self.as_peripheral(device)
        except (Crash, Hang, LinkLost, asyncio.TimeoutError) as err:
            figure, what = {Crash: ("crashes", "crash"), Hang: ("hangs", "hang"), LinkLost: ("links_lost", "link lost"),
                            asyncio.TimeoutError: ("hangs", "hang")}[type(err)]
            text = str(err) if not isinstance(err, asyncio.TimeoutError) else "the round did not end within %.0f s" % ROUND_TIMEOUT
            r = self.current_round
            self.figures[figure] += 1
            self.problem("-" if r is None else r, "%s: %s%s" % (what, text, "" if r is None else "\n  " + self.reproduce(r)))
        finally:
            status = await self.blelab.quit()
            if status is None:
                self.figures["hangs"] += 1
                self.problem("-", "hang: blelab did not exit within %.0f s of 'quit' (killed)" % EXIT_TIMEOUT)
            elif status != 0 and not any(p[1].startswith("crash") for p in self.problems):
                self.figures["crashes"] += 1
                self.problem("-", "crash: blelab ended with %s\n%s" % (describe_status(status), self.blelab.stderr_tail()))
            done = [e for e in self.blelab.events if e.get("event") == "done"]
            if status == 0 and (not done or not done[-1].get("ok")):
                self.problem("-", "blelab's done line says it did not end well: %s" % (done[-1] if done else "none"))
            for e in self.blelab.unattributed():
                self.figures["reports_unexpected"] += 1
                self.problem("-", "a report on no connection: %s/%s %s" % (e.get("layer"), e.get("kind"), e.get("detail")))
            if transport is not None:
                try:
                    await asyncio.wait_for(transport.close(), 3.0)
                except Exception:  # noqa: BLE001
                    pass

    # -- BLELab as peripheral: we are the central

    async def as_central(self, device):
        target = hci.Address(BLELAB_ADDRESS, hci.Address.RANDOM_DEVICE_ADDRESS)
        prefs = {hci.Phy.LE_1M: ConnectionParametersPreferences(connection_interval_min=7.5, connection_interval_max=7.5)}
        for r in range(self.args.first_round, self.args.first_round + self.args.rounds):
            rng = random.Random("%d:%s:%d" % (self.args.seed, self.role, r))
            self.blelab.check_alive()
            try:
                connection = await asyncio.wait_for(device.connect(target, own_address_type=hci.OwnAddressType.RANDOM,
                                                                   connection_parameters_preferences=prefs),
                                                    CONNECT_TIMEOUT)
            except (asyncio.TimeoutError, hci.HCI_Error, Exception) as err:  # noqa: BLE001
                self.blelab.check_alive()
                raise Hang("round %d: no connection to BLELab's peripheral within %.0f s (%s)" % (r, CONNECT_TIMEOUT, err))
            await asyncio.wait_for(self.round(r, rng, connection, phase1=None), ROUND_TIMEOUT)

    # -- BLELab as central: we are the peripheral

    def build_gatt(self, device):
        P = Characteristic.Properties
        self.chars = [
            Characteristic(WRITE_UUID, P.READ | P.WRITE, Characteristic.READABLE | Characteristic.WRITEABLE,
                           CharacteristicValue(read=lambda c: b"w", write=lambda c, v: None)),
            Characteristic(WWR_UUID, P.WRITE_WITHOUT_RESPONSE, Characteristic.WRITEABLE,
                           CharacteristicValue(write=lambda c, v: None)),
            Characteristic(NOTIFY_UUID, P.NOTIFY | P.READ, Characteristic.READABLE, b"n"),
        ]
        device.add_service(Service(SERVICE_UUID, self.chars))
        server = device.gatt_server
        original_pdu, original_send = server.on_gatt_pdu, server.send_gatt_pdu
        self.last_request = b""
        self.marker = asyncio.Event()

        def on_gatt_pdu(connection, att_pdu):
            self.last_request = bytes(att_pdu)
            return original_pdu(connection, att_pdu)

        def send_gatt_pdu(bearer, pdu):
            pdu = bytes(pdu)
            rnd = self.current
            is_marker = self.last_request[:1] == b"\x08" and self.last_request[5:7] == b"\x00\x2a"
            if (rnd is not None and not is_marker and pdu and pdu[0] & 1 and pdu[0] not in (0x1B, 0x1D)
                    and rnd.tampered < 2 and rnd.tamper_rng.random() < 0.08):
                pdu, kind = tampered_response(rnd.tamper_rng, pdu)
                rnd.tampered += 1
                rnd.action = "tampered-response-to-0x%02x" % self.last_request[0]
                rnd.expect("att", kind, "none")
            if self.last_request[:1] == b"\x02" and len(self.last_request) == 3 and len(pdu) == 3 and pdu[0] == 0x03:
                # BLELab's client exchanged MTU (3.4.2.2): min of both Rx MTUs, never below 23.
                # Often before the round has begun (its script starts as soon as it connects).
                client_rx = self.last_request[1] | self.last_request[2] << 8
                self.mtu_by_handle[bearer.handle] = max(23, min(client_rx, pdu[1] | pdu[2] << 8))
            original_send(bearer, pdu)
            if is_marker:
                self.marker.set()

        server.on_gatt_pdu = on_gatt_pdu
        server.send_gatt_pdu = send_gatt_pdu
        self.current = None

    async def as_peripheral(self, device):
        connected = asyncio.Queue()

        def on_connection(c):
            self.mtu_by_handle.pop(c.handle, None)     # handles are reused: nothing exchanged yet
            connected.put_nowait(c)

        device.on("connection", on_connection)

        async def advertise():
            data = bytes([2, 0x01, 0x06]) + bytes([12, 0x09]) + b"HostilePeer"
            await device.start_advertising(own_address_type=hci.OwnAddressType.RANDOM, auto_restart=False,
                                           advertising_data=data, advertising_interval_min=20, advertising_interval_max=20)

        for r in range(self.args.first_round, self.args.first_round + self.args.rounds):
            rng = random.Random("%d:%s:%d" % (self.args.seed, self.role, r))
            self.blelab.check_alive()
            await advertise()
            try:
                connection = await asyncio.wait_for(connected.get(), CONNECT_TIMEOUT)
            except asyncio.TimeoutError:
                self.blelab.check_alive()
                raise Hang("round %d: BLELab's central did not connect within %.0f s" % (r, CONNECT_TIMEOUT))
            await asyncio.wait_for(self.round(r, rng, connection, phase1=self.script_phase), ROUND_TIMEOUT)

    async def script_phase(self, rnd: Round):
        """BLELab's GATT script runs against our (sometimes wrong) answers; True when it finished,
        False when we cut it with a disconnection."""
        self.marker.clear()
        self.current = rnd
        try:
            if rnd.rng.random() < 1 / 8:
                await asyncio.sleep(rnd.rng.uniform(0.0, 0.4))
                if not self.marker.is_set():
                    return False
            marker = asyncio.ensure_future(self.marker.wait())
            deadline = time.monotonic() + SCRIPT_TIMEOUT
            try:
                while not marker.done() and rnd.is_up() and time.monotonic() < deadline:
                    await asyncio.wait([marker], timeout=0.1)
            finally:
                marker.cancel()
            if not rnd.is_up():
                return False
            if not self.marker.is_set():
                self.blelab.check_alive()
                raise Hang("BLELab's GATT script (ending with the Device Name read) did not finish within %.0f s" % SCRIPT_TIMEOUT)
            return True
        finally:
            self.current = None

    # -- one round, either role

    async def round(self, r: int, rng: random.Random, connection, phase1):
        self.current_round = r
        self.connections += 1
        number = self.connections
        disconnected = asyncio.get_running_loop().create_future()
        connection.on("disconnection", lambda reason: disconnected.done() or disconnected.set_result(reason))
        await self.blelab.wait_for(lambda e: e.get("event") == "connected" and e.get("connection") == number,
                                   REPORT_TIMEOUT, "'connected' for connection %d" % number)
        rnd = Round(self.peer, connection, rng, self.role, number)
        rnd.is_up = lambda: not disconnected.done()
        rnd.disconnected = disconnected
        rnd.server_rx_mtu = self.server_rx_mtu
        record = {"round": r, "connection": number, "actions": [], "early": False}
        self.figures["rounds"] += 1
        finished = True
        if phase1 is not None:
            finished = await phase1(rnd)
            rnd.att_mtu = self.mtu_by_handle.get(connection.handle, 23)
            if rnd.tampered:
                self.figures["tampered_responses"] += rnd.tampered
        pool = actions_for(self.role)
        weights = [a.weight for a in pool]
        plan = rng.choices(pool, weights, k=rng.randint(3, 8)) if finished else []
        early = rng.randrange(len(plan)) if plan and rng.random() < 1 / 7 else None
        for i, action in enumerate(plan):
            rnd.action = action.name
            rnd.actions.append(action.name)
            rnd.no_wait = early == i
            self.figures["benign_actions" if action.benign else "actions"] += 1
            await action.run(rnd)
            if rnd.dropped_as_expected:
                self.figures["links_dropped"] += 1
                record["dropped"] = action.name
                break
            if not rnd.is_up():
                await self.link_lost(r, "after %s" % action.name)
            if early == i:
                break
        dangling = False
        if finished and early is None and not rnd.dropped_as_expected:
            if not await rnd.probe():
                await self.link_lost(r, "while probing its ATT server")
            if rng.random() < 0.2:
                rnd.action = "dangling-fragment"
                rnd.raw(0b00, l2cap(ATT, READ_DEVICE_NAME[:3], length=len(READ_DEVICE_NAME)))
                rnd.expect("l2cap", "incomplete-frame", "none")
                dangling = True
        if early is not None or not finished:
            self.figures["disconnects_early"] += 1
            record["early"] = True
        await rnd.drain()
        if not finished and not rnd.is_up():
            await self.link_lost(r, "during its GATT script")
        if rnd.dropped_as_expected and rnd.no_wait and rnd.is_up():
            # Ended early right after the action: BLELab's drop and our Disconnect may cross.
            try:
                await asyncio.wait_for(asyncio.shield(disconnected), ANSWER_TIMEOUT)
            except asyncio.TimeoutError:
                pass
        if rnd.is_up():
            try:
                await asyncio.wait_for(connection.disconnect(), 5.0)
            except Exception:  # noqa: BLE001 - it may already be going
                pass
        try:
            await asyncio.wait_for(disconnected, 5.0)
        except asyncio.TimeoutError:
            raise Hang("round %d: the link did not go down within 5 s of Disconnect" % r)
        await self.blelab.wait_for(lambda e: e.get("event") == "disconnected" and e.get("connection") == number,
                                   REPORT_TIMEOUT, "'disconnected' for connection %d" % number)
        self.compare(r, rnd, record, dangling)

    async def link_lost(self, r: int, when: str):
        """The link went down and we did not end it: a crashed blelab (its controller connection
        closed, so RootCanal ended the link), or BLELab disconnecting on its own."""
        try:
            await asyncio.wait_for(self.blelab.proc.wait(), 2.0)
        except asyncio.TimeoutError:
            pass
        self.blelab.check_alive()
        raise LinkLost("round %d: BLELab's side ended the link %s" % (r, when))

    def compare(self, r: int, rnd: Round, record: dict, dangling: bool):
        expected = [(l, k, a) for l, k, a, _ in rnd.expected]
        reported = [(e.get("layer"), e.get("kind"), e.get("answer")) for e in self.blelab.violations(rnd.number)]
        missing = collections.Counter(expected) - collections.Counter(reported)
        extra = collections.Counter(reported) - collections.Counter(expected)
        matched = len(expected) - sum(missing.values())
        self.figures["violations_sent"] += len(expected)
        self.figures["violations_reported"] += matched
        self.figures["violations_unreported"] += sum(missing.values())
        self.figures["reports_unexpected"] += sum(extra.values())
        self.figures["answers_wrong"] += len(rnd.failures)
        reproduce = self.reproduce(r)
        by_action = {}
        for l, k, a, action in rnd.expected:
            by_action.setdefault((l, k, a), action)
        for (l, k, a), n in missing.items():
            self.problem(r, "unreported: %s/%s -> %s (x%d, from %s)\n  %s" % (l, k, a, n, by_action.get((l, k, a)), reproduce))
        for (l, k, a), n in extra.items():
            detail = next((e.get("detail") for e in self.blelab.violations(rnd.number)
                           if (e.get("layer"), e.get("kind"), e.get("answer")) == (l, k, a)), "")
            self.problem(r, "unexpected report: %s/%s -> %s (x%d): %s\n  %s" % (l, k, a, n, detail, reproduce))
        if not missing and not extra and expected != reported:
            self.figures["answers_wrong"] += 1
            self.problem(r, "reports in another order than sent: sent %s, reported %s\n  %s" % (expected, reported, reproduce))
        for failure in rnd.failures:
            self.problem(r, "answer: %s\n  %s" % (failure, reproduce))
        if not record["early"]:
            for text in rnd.unanswered():
                self.figures["answers_wrong"] += 1
                self.problem(r, "BLELab sent what no action asked for: %s\n  %s" % (text, reproduce))
        record.update(actions=rnd.actions, dangling=dangling, tampered=rnd.tampered,
                      expected=["%s/%s -> %s" % e for e in expected], reported=["%s/%s -> %s" % e for e in reported],
                      answer_failures=rnd.failures)
        self.rounds.append(record)


# ------------------------------------------------------------------------------------------------

FIGURES = ["rounds", "crashes", "hangs", "links_lost", "violations_sent", "violations_reported", "violations_unreported",
           "reports_unexpected", "answers_wrong", "actions", "benign_actions", "tampered_responses", "disconnects_early",
           "links_dropped"]


def run_role(role: str, args) -> RoleRun:
    helper, endpoint = start_rootcanal(args.venv, args.log_dir)
    log("%s: RootCanal (pid %d) on %s" % (role, helper.pid, endpoint))
    run = RoleRun(role, args, endpoint, args.out)
    try:
        asyncio.run(run.run())
    finally:
        note = helper.stop()
        if not helper.alive() and "nothing left" not in note:
            log("%s: %s" % (role, note))
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    build = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
    ap.add_argument("--blelab", required=True, help="the blelab executable")
    ap.add_argument("--role", choices=["peripheral", "central", "both"], default="both", help="BLELab's role (both: one after the other)")
    ap.add_argument("--rounds", type=int, default=20, help="rounds per role (20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first-round", type=int, default=0, help="start at this round (a reproduce line's)")
    ap.add_argument("--out", default=os.path.join(build, "hostile"), help="blelab's JSON timelines and report.json go here")
    ap.add_argument("--venv", default=os.environ.get("VENV", os.path.join(build, "venv")))
    ap.add_argument("--log-dir", default=os.path.join(build, "tiers", "logs"))
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.log_dir, exist_ok=True)
    roles = ["peripheral", "central"] if args.role == "both" else [args.role]
    t0 = time.monotonic()
    runs = []
    for role in roles:
        try:
            runs.append(run_role(role, args))
        except StartError as err:
            log("%s: RootCanal did not start: %s" % (role, err))
            return 1
    total = collections.Counter()
    for run in runs:
        total.update(run.figures)
        print("hostile %s: %s" % (run.role, ", ".join("%s %d" % (f, run.figures[f]) for f in FIGURES)))
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump({"seed": args.seed, "first_round": args.first_round, "rounds_per_role": args.rounds,
                   "figures": {f: total[f] for f in FIGURES},
                   "roles": [{"role": r.role, "figures": dict(r.figures), "problems": [{"round": p[0], "text": p[1]} for p in r.problems],
                              "rounds": r.rounds} for r in runs]}, f, indent=2)
    for f in FIGURES:
        print("hostile_%s: %d" % (f, total[f]))
    print("hostile_seconds: %.1f" % (time.monotonic() - t0))
    problems = [(run.role, p) for run in runs for p in run.problems]
    for role, (r, text) in problems:
        print("FAIL %s round %s: %s" % (role, r, text))
    bad = total["crashes"] + total["hangs"] + total["links_lost"] + total["violations_unreported"] + total["reports_unexpected"] + total["answers_wrong"]
    bad += sum(1 for _, (_, text) in problems if text.startswith("blelab's done line"))
    print("hostile: %s (report: %s)" % ("PASS" if bad == 0 else "FAIL", os.path.join(args.out, "report.json")))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
