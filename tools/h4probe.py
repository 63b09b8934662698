#!/usr/bin/env python3
"""h4probe: talk HCI over an H4 socket to a virtual controller and show what it answers.

Standard library only (runs with any Python 3.8+, no venv needed). Written for BLELab's socket
tier: it sends the commands BLELab's host sends (power-on, legacy advertising, scanning, LE Create
Connection, ACL data, Disconnect) and prints every event decoded, one per line.

Endpoints (the same spelling BLELab's --transport h4: takes):
    tcp:HOST:PORT     H4 over TCP (RootCanal's HCI port, a Bumble tcp-server controller)
    HOST:PORT         same as tcp:
    unix:PATH         H4 over a unix stream socket (a Bumble unix-server controller)

Sub-commands:
    info EP                       BLELab's power-on sequence, then a few extra reads; prints
                                  every answer and a summary (address, version, buffers, which
                                  of BLELab's commands the controller says it supports)
    advertise EP [--seconds S]    power-on, legacy connectable advertising (ADV_IND) with a
                                  name; prints whatever arrives (connections, disconnections)
    scan EP [--seconds S]         power-on, active legacy scan; prints advertising reports
    pair EP_PERIPH EP_CENTRAL     the smoke test: advertise on one controller, scan on the other
                                  until the advertiser is seen, connect, send L2CAP data both
                                  ways, disconnect. Exit 0 when every step worked, 1 otherwise
    cmd EP OPCODE [HEXPARAMS]     one raw command (OPCODE as 0x0c03 or OGF:OCF like 3:3)

Options: --json (one JSON object per line instead of text), --timeout S (per command; 5 s).
Exit codes: 0 ok, 1 a step failed (the reason is printed), 2 bad arguments or unreachable endpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import sys
import time

# ----------------------------------------------------------------------------------------------
# Names

OPCODES = {
    0x0406: "Disconnect",
    0x0C01: "Set Event Mask",
    0x0C03: "Reset",
    0x1001: "Read Local Version Information",
    0x1002: "Read Local Supported Commands",
    0x1003: "Read Local Supported Features",
    0x1005: "Read Buffer Size",
    0x1009: "Read BD_ADDR",
    0x1405: "Read RSSI",
    0x2001: "LE Set Event Mask",
    0x2002: "LE Read Buffer Size",
    0x2003: "LE Read Local Supported Features",
    0x2005: "LE Set Random Address",
    0x2006: "LE Set Advertising Parameters",
    0x2007: "LE Read Advertising Physical Channel Tx Power",
    0x2008: "LE Set Advertising Data",
    0x2009: "LE Set Scan Response Data",
    0x200A: "LE Set Advertising Enable",
    0x200B: "LE Set Scan Parameters",
    0x200C: "LE Set Scan Enable",
    0x200D: "LE Create Connection",
    0x200E: "LE Create Connection Cancel",
    0x200F: "LE Read Filter Accept List Size",
    0x2013: "LE Connection Update",
    0x201C: "LE Read Supported States",
    0x202F: "LE Read Maximum Data Length",
    0x2060: "LE Read Buffer Size v2",
}

EVENTS = {
    0x05: "Disconnection Complete",
    0x08: "Encryption Change",
    0x0C: "Read Remote Version Information Complete",
    0x0E: "Command Complete",
    0x0F: "Command Status",
    0x10: "Hardware Error",
    0x13: "Number Of Completed Packets",
    0x1A: "Data Buffer Overflow",
    0x3E: "LE Meta",
    0x57: "Authenticated Payload Timeout Expired",
}

LE_SUBEVENTS = {
    0x01: "LE Connection Complete",
    0x02: "LE Advertising Report",
    0x03: "LE Connection Update Complete",
    0x04: "LE Read Remote Features Complete",
    0x05: "LE Long Term Key Request",
    0x06: "LE Remote Connection Parameter Request",
    0x07: "LE Data Length Change",
    0x0A: "LE Enhanced Connection Complete",
    0x0C: "LE PHY Update Complete",
    0x0D: "LE Extended Advertising Report",
    0x12: "LE Advertising Set Terminated",
    0x14: "LE Channel Selection Algorithm",
    0x29: "LE Enhanced Connection Complete v2",
}

# Read Local Supported Commands bit positions (octet, bit), Core 5.4 Vol 4 Part E 6.27.
SUPPORTED_COMMAND_BITS = {
    "Disconnect": (0, 5),
    "Set Event Mask": (5, 6),
    "Reset": (5, 7),
    "Read Local Version Information": (14, 3),
    "Read Local Supported Features": (14, 5),
    "Read Buffer Size": (14, 7),
    "Read BD_ADDR": (15, 1),
    "Read RSSI": (15, 5),
    "LE Set Event Mask": (25, 0),
    "LE Read Buffer Size": (25, 1),
    "LE Read Local Supported Features": (25, 2),
    "LE Set Random Address": (25, 4),
    "LE Set Advertising Parameters": (25, 5),
    "LE Read Advertising Physical Channel Tx Power": (25, 6),
    "LE Set Advertising Data": (25, 7),
    "LE Set Scan Response Data": (26, 0),
    "LE Set Advertising Enable": (26, 1),
    "LE Set Scan Parameters": (26, 2),
    "LE Set Scan Enable": (26, 3),
    "LE Create Connection": (26, 4),
    "LE Create Connection Cancel": (26, 5),
    "LE Connection Update": (27, 2),
    "LE Set Extended Advertising Parameters": (36, 2),
    "LE Set Extended Scan Parameters": (37, 5),
    "LE Extended Create Connection": (37, 7),
}

STATUS = {
    0x00: "Success", 0x01: "Unknown HCI Command", 0x02: "Unknown Connection Identifier",
    0x07: "Memory Capacity Exceeded", 0x0C: "Command Disallowed", 0x11: "Unsupported Feature or Parameter Value",
    0x12: "Invalid HCI Command Parameters", 0x13: "Remote User Terminated Connection",
    0x16: "Connection Terminated By Local Host", 0x1F: "Unspecified Error", 0x3B: "Unacceptable Connection Parameters",
    0x3E: "Connection Failed to be Established",
}

# What BLELab's host sends at power-on (Sources/GAP/BLEHost.swift, powerOn()).
BLELAB_EVENT_MASK = 0x0000_1FFF_FFFF_FFFF | (1 << 61)     # spec default + LE Meta
BLELAB_LE_EVENT_MASK = 0x07                               # Connection Complete, Adv Report, Conn Update Complete


def opname(op: int) -> str:
    return OPCODES.get(op, "OGF 0x%02x OCF 0x%03x" % (op >> 10, op & 0x3FF))


def status_text(s: int) -> str:
    return "0x%02x %s" % (s, STATUS.get(s, ""))


def addr_text(b: bytes) -> str:
    return ":".join("%02X" % x for x in reversed(b))


def addr_bytes(text: str) -> bytes:
    parts = text.split(":")
    if len(parts) != 6:
        raise ValueError("an address is six hex octets like C0:11:22:33:44:55, not %r" % text)
    return bytes(int(p, 16) for p in reversed(parts))


def parse_ad(data: bytes) -> dict:
    """The AD structures BLELab cares about: flags, name, 16-bit UUIDs."""
    out: dict = {}
    i = 0
    while i < len(data):
        n = data[i]
        if n == 0 or i + 1 + n > len(data):
            break
        t, v = data[i + 1], data[i + 2:i + 1 + n]
        if t == 0x01 and v:
            out["flags"] = v[0]
        elif t in (0x08, 0x09):
            out["name"] = v.decode("utf-8", "replace")
        elif t in (0x02, 0x03):
            out.setdefault("uuid16", []).extend("%04X" % struct.unpack_from("<H", v, k)[0] for k in range(0, len(v) - 1, 2))
        else:
            out.setdefault("other", []).append("%02x:%s" % (t, v.hex()))
        i += 1 + n
    return out


# ----------------------------------------------------------------------------------------------
# Decoding

def decode_return(op: int, rp: bytes) -> dict:
    d: dict = {}
    if not rp:
        return d
    d["status"] = rp[0]
    r = rp[1:]
    try:
        if op == 0x1001 and len(r) >= 8:
            hv, hr, lv, mf, ls = struct.unpack_from("<BHBHH", r)
            d.update(hci_version=hv, hci_revision=hr, lmp_version=lv, manufacturer=mf, lmp_subversion=ls)
        elif op == 0x1002 and len(r) >= 64:
            d["supported"] = {name: bool(r[o] >> b & 1) for name, (o, b) in SUPPORTED_COMMAND_BITS.items()}
            d["commands_hex"] = r[:64].hex()
        elif op == 0x1009 and len(r) >= 6:
            d["bd_addr"] = addr_text(r[:6])
        elif op == 0x1005 and len(r) >= 7:
            acl_len, sco_len, acl_n, sco_n = struct.unpack_from("<HBHH", r)
            d.update(acl_data_packet_length=acl_len, synchronous_data_packet_length=sco_len,
                     total_num_acl_data_packets=acl_n, total_num_synchronous_data_packets=sco_n)
        elif op == 0x2002 and len(r) >= 3:
            ln, n = struct.unpack_from("<HB", r)
            d.update(le_acl_data_packet_length=ln, total_num_le_acl_data_packets=n)
        elif op == 0x2060 and len(r) >= 6:
            ln, n, iln, iN = struct.unpack_from("<HBHB", r)
            d.update(le_acl_data_packet_length=ln, total_num_le_acl_data_packets=n,
                     iso_data_packet_length=iln, total_num_iso_data_packets=iN)
        elif op in (0x1003, 0x2003, 0x201C) and len(r) >= 8:
            d["bits_hex"] = r[:8].hex()
            if op == 0x2003:
                f = int.from_bytes(r[:8], "little")
                d["le_extended_advertising"] = bool(f >> 12 & 1)
                d["le_data_packet_length_extension"] = bool(f >> 5 & 1)
                d["le_2m_phy"] = bool(f >> 8 & 1)
                d["ll_privacy"] = bool(f >> 6 & 1)
        elif op == 0x202F and len(r) >= 8:
            a, b, c, e = struct.unpack_from("<HHHH", r)
            d.update(max_tx_octets=a, max_tx_time=b, max_rx_octets=c, max_rx_time=e)
        elif op == 0x2007 and len(r) >= 1:
            d["tx_power_dbm"] = struct.unpack_from("<b", r)[0]
        elif op == 0x1405 and len(r) >= 3:
            d["handle"], d["rssi"] = struct.unpack_from("<Hb", r)
        elif op == 0x200F and len(r) >= 1:
            d["size"] = r[0]
        elif len(r):
            d["rest_hex"] = r.hex()
    except struct.error:
        d["rest_hex"] = r.hex()
    return d


def decode_event(code: int, p: bytes) -> dict:
    e: dict = {"type": "event", "event": EVENTS.get(code, "0x%02x" % code), "code": code}
    if code == 0x0E and len(p) >= 3:
        ncmd, op = struct.unpack_from("<BH", p)
        e.update(ncmd=ncmd, opcode=op, command=opname(op), **decode_return(op, p[3:]))
    elif code == 0x0F and len(p) >= 4:
        st, ncmd, op = struct.unpack_from("<BBH", p)
        e.update(status=st, ncmd=ncmd, opcode=op, command=opname(op))
    elif code == 0x05 and len(p) >= 4:
        st, h, reason = struct.unpack_from("<BHB", p)
        e.update(status=st, handle=h, reason=reason)
    elif code == 0x13 and len(p) >= 1:
        n = p[0]
        e["completed"] = [{"handle": struct.unpack_from("<H", p, 1 + 4 * i)[0],
                           "count": struct.unpack_from("<H", p, 3 + 4 * i)[0]} for i in range(n) if len(p) >= 5 + 4 * i]
    elif code == 0x10 and len(p) >= 1:
        e["hardware_code"] = p[0]
    elif code == 0x3E and len(p) >= 1:
        sub = p[0]
        e["subevent"] = LE_SUBEVENTS.get(sub, "0x%02x" % sub)
        e["subevent_code"] = sub
        q = p[1:]
        if sub in (0x01, 0x0A, 0x29) and len(q) >= 18:
            st, h, role, at = struct.unpack_from("<BHBB", q)
            a = q[5:11]
            rest = q[11:] if sub == 0x01 else q[23:]
            e.update(status=st, handle=h, role="central" if role == 0 else "peripheral",
                     peer_address_type=at, peer_address=addr_text(a))
            if len(rest) >= 7:
                iv, lat, to, mca = struct.unpack_from("<HHHB", rest)
                e.update(interval=iv, latency=lat, supervision_timeout=to, central_clock_accuracy=mca)
        elif sub == 0x02 and len(q) >= 1:
            n = q[0]
            reports = []
            i = 1
            for _ in range(n):
                if i + 9 > len(q):
                    break
                et, at = q[i], q[i + 1]
                a = q[i + 2:i + 8]
                ln = q[i + 8]
                data = q[i + 9:i + 9 + ln]
                rssi = struct.unpack_from("<b", q, i + 9 + ln)[0] if i + 9 + ln < len(q) else None
                reports.append({"event_type": et, "address_type": at, "address": addr_text(a),
                                "data_hex": data.hex(), "ad": parse_ad(data), "rssi": rssi})
                i += 10 + ln
            e["reports"] = reports
        elif sub == 0x0D and len(q) >= 1:
            n = q[0]
            reports = []
            i = 1
            for _ in range(n):
                if i + 24 > len(q):
                    break
                et, at = struct.unpack_from("<HB", q, i)
                a = q[i + 3:i + 9]
                rssi = struct.unpack_from("<b", q, i + 13)[0]
                ln = q[i + 23]
                data = q[i + 24:i + 24 + ln]
                reports.append({"event_type": et, "address_type": at, "address": addr_text(a),
                                "data_hex": data.hex(), "ad": parse_ad(data), "rssi": rssi})
                i += 24 + ln
            e["reports"] = reports
        elif sub == 0x03 and len(q) >= 9:
            st, h, iv, lat, to = struct.unpack_from("<BHHHH", q)
            e.update(status=st, handle=h, interval=iv, latency=lat, supervision_timeout=to)
        elif sub == 0x07 and len(q) >= 10:
            h, a, b, c, d = struct.unpack_from("<HHHHH", q)
            e.update(handle=h, max_tx_octets=a, max_tx_time=b, max_rx_octets=c, max_rx_time=d)
        elif sub == 0x14 and len(q) >= 3:
            h, alg = struct.unpack_from("<HB", q)
            e.update(handle=h, algorithm=alg)
        elif sub == 0x04 and len(q) >= 3:
            st, h = struct.unpack_from("<BH", q)
            e.update(status=st, handle=h, features_hex=q[3:11].hex())
        else:
            e["params_hex"] = q.hex()
    else:
        e["params_hex"] = p.hex()
    return e


# ----------------------------------------------------------------------------------------------
# Connections

TCP_QUICKACK = getattr(socket, "TCP_QUICKACK", 12 if sys.platform.startswith("linux") else None)
QUICKACK = True     # --no-quickack turns it off, to measure what it saves


class ProbeError(Exception):
    pass


def parse_endpoint(text: str):
    if text.startswith("unix:"):
        return ("unix", text[5:])
    for prefix in ("tcp:", "tcp-client:"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError("endpoint %r: use tcp:HOST:PORT, HOST:PORT or unix:PATH" % text)
    return ("tcp", (host or "127.0.0.1", int(port)))


class Output:
    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.t0 = time.monotonic()

    def emit(self, label: str, record: dict):
        record = dict(record)
        record["t"] = round(time.monotonic() - self.t0, 4)
        record["dev"] = label
        if self.as_json:
            print(json.dumps(record, sort_keys=False), flush=True)
            return
        kind = record.get("type")
        if kind == "command":
            text = "-> %s %s" % (record["command"], record.get("params_hex", ""))
        elif kind == "acl-out":
            text = "-> ACL handle 0x%03x %s" % (record["handle"], record["data_hex"])
        elif kind == "acl":
            text = "<- ACL handle 0x%03x pb=%d %s" % (record["handle"], record["pb"], record["data_hex"])
        elif kind == "event":
            skip = {"type", "event", "code", "t", "dev", "subevent", "subevent_code", "opcode"}
            name = record.get("subevent") or record["event"]
            if record.get("command"):
                name += " (" + record["command"] + ")"
            fields = ", ".join("%s=%s" % (k, status_text(v) if k == "status" else v)
                               for k, v in record.items() if k not in skip and k != "command")
            text = "<- %s  %s" % (name, fields)
        else:
            text = " ".join("%s=%s" % (k, v) for k, v in record.items() if k not in ("t", "dev"))
        print("%8.4f %-6s %s" % (record["t"], label, text), flush=True)


class Device:
    """One H4 connection (one controller)."""

    def __init__(self, label: str, endpoint: str, out: Output, timeout: float, quickack: bool = True):
        self.label, self.endpoint, self.out, self.timeout = label, endpoint, out, timeout
        kind, where = parse_endpoint(endpoint)
        self.quickack = quickack and QUICKACK and kind == "tcp" and TCP_QUICKACK is not None
        try:
            if kind == "tcp":
                self.sock = socket.create_connection(where, timeout=timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(where)
        except OSError as err:
            raise ConnectionError("%s: cannot connect to %s: %s" % (label, endpoint, err)) from err
        self.sock.setblocking(False)
        self.buf = b""
        self.events: list = []      # decoded records not yet consumed by a wait
        self.closed = False

    # -- sending
    def command(self, op: int, params: bytes = b"", quiet: bool = False):
        if not quiet:
            self.out.emit(self.label, {"type": "command", "command": opname(op), "opcode": op, "params_hex": params.hex()})
        self.sock.sendall(bytes([0x01]) + struct.pack("<HB", op, len(params)) + params)

    def acl(self, handle: int, payload: bytes, pb: int = 0x0):
        self.out.emit(self.label, {"type": "acl-out", "handle": handle, "data_hex": payload.hex()})
        self.sock.sendall(bytes([0x02]) + struct.pack("<HH", handle | pb << 12, len(payload)) + payload)

    # -- receiving
    def feed(self):
        try:
            if self.quickack:
                # RootCanal writes each H4 packet as two send() calls (indicator, then the rest)
                # with Nagle on: without an immediate ACK from us, the second half waits for the
                # peer's delayed-ACK timer, ~40 ms per event. TCP_QUICKACK is one-shot, so re-arm.
                self.sock.setsockopt(socket.IPPROTO_TCP, TCP_QUICKACK, 1)
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as err:
            data = b""
            self.out.emit(self.label, {"type": "closed", "error": str(err)})
        if not data:
            if not self.closed:
                self.out.emit(self.label, {"type": "closed", "error": "the controller closed the connection"})
            self.closed = True
            return
        self.buf += data
        while self.buf:
            kind = self.buf[0]
            if kind == 0x04:
                if len(self.buf) < 3 or len(self.buf) < 3 + self.buf[2]:
                    return
                n = 3 + self.buf[2]
                rec = decode_event(self.buf[1], self.buf[3:n])
            elif kind == 0x02:
                if len(self.buf) < 5:
                    return
                hf, ln = struct.unpack_from("<HH", self.buf, 1)
                if len(self.buf) < 5 + ln:
                    return
                n = 5 + ln
                rec = {"type": "acl", "handle": hf & 0xFFF, "pb": hf >> 12 & 3, "data_hex": self.buf[5:n].hex()}
            else:
                raise ProbeError("%s: H4 packet indicator 0x%02x is not an event or ACL; bytes: %s"
                                 % (self.label, kind, self.buf[:32].hex()))
            self.buf = self.buf[n:]
            self.out.emit(self.label, rec)
            self.events.append(rec)


class Lab:
    def __init__(self, devices):
        self.devices = devices

    def pump(self, seconds: float, until_any: bool = False):
        """Reads and prints what arrives for `seconds` (or until something arrives, with until_any)."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            open_devs = [d for d in self.devices if not d.closed]
            if not open_devs:
                time.sleep(left)
                return
            r, _, _ = select.select([d.sock for d in open_devs], [], [], left)
            for d in open_devs:
                if d.sock in r:
                    d.feed()
            if r and until_any:
                return

    def wait(self, dev: Device, pred, what: str, timeout: float = None):
        """Waits for a record on dev matching pred; returns it (removed from dev.events)."""
        end = time.monotonic() + (timeout if timeout is not None else dev.timeout)
        while True:
            for i, rec in enumerate(dev.events):
                if pred(rec):
                    del dev.events[i]
                    return rec
            if dev.closed:
                raise ProbeError("%s (%s) closed while waiting for %s" % (dev.label, dev.endpoint, what))
            left = end - time.monotonic()
            if left <= 0:
                raise ProbeError("%s (%s): no %s within %.1f s" % (dev.label, dev.endpoint, what,
                                                                  timeout if timeout is not None else dev.timeout))
            self.pump(min(left, 0.05), until_any=True)

    def run(self, dev: Device, op: int, params: bytes = b"", allow_status=False, check=True) -> dict:
        """Sends a command and waits for its Command Complete (or Command Status)."""
        dev.command(op, params)
        rec = self.wait(dev, lambda e: e.get("code") in (0x0E, 0x0F) and e.get("opcode") == op,
                        "answer to %s" % opname(op))
        if rec["code"] == 0x0F and not allow_status:
            raise ProbeError("%s: %s answered with Command Status (status %s), expected Command Complete"
                             % (dev.label, opname(op), status_text(rec["status"])))
        if check and rec.get("status", 0) != 0:
            raise ProbeError("%s: %s failed with status %s" % (dev.label, opname(op), status_text(rec["status"])))
        return rec


# ----------------------------------------------------------------------------------------------
# Steps BLELab's host takes

def power_on(lab: Lab, dev: Device) -> dict:
    info: dict = {"endpoint": dev.endpoint}
    lab.run(dev, 0x0C03)
    v = lab.run(dev, 0x1001)
    info["version"] = {k: v[k] for k in ("hci_version", "hci_revision", "lmp_version", "manufacturer", "lmp_subversion") if k in v}
    c = lab.run(dev, 0x1002)
    info["supported"] = c.get("supported", {})
    info["bd_addr"] = lab.run(dev, 0x1009).get("bd_addr")
    lab.run(dev, 0x0C01, struct.pack("<Q", BLELAB_EVENT_MASK))
    lab.run(dev, 0x2001, struct.pack("<Q", BLELAB_LE_EVENT_MASK))
    b = lab.run(dev, 0x2002)
    info["le_buffers"] = {"length": b.get("le_acl_data_packet_length"), "count": b.get("total_num_le_acl_data_packets")}
    if not b.get("le_acl_data_packet_length"):
        s = lab.run(dev, 0x1005)
        info["shared_buffers"] = {"length": s.get("acl_data_packet_length"), "count": s.get("total_num_acl_data_packets")}
    return info


def ad_name(name: str) -> bytes:
    raw = name.encode()[:29 - 3]
    return bytes([2, 0x01, 0x06, len(raw) + 1, 0x09]) + raw


def start_advertising(lab: Lab, dev: Device, name: str, interval_units: int = 0x00A0):
    # ADV_IND, public address, all channels, no filter (Vol 4 Part E 7.8.5)
    lab.run(dev, 0x2006, struct.pack("<HHBBB6sBB", interval_units, interval_units, 0x00, 0x00, 0x00, bytes(6), 0x07, 0x00))
    data = ad_name(name)
    lab.run(dev, 0x2008, bytes([len(data)]) + data.ljust(31, b"\0"))
    lab.run(dev, 0x2009, bytes([0]) + bytes(31))
    lab.run(dev, 0x200A, b"\x01")


def start_scanning(lab: Lab, dev: Device, active: bool = True):
    lab.run(dev, 0x200B, struct.pack("<BHHBB", 1 if active else 0, 0x0010, 0x0010, 0x00, 0x00))
    lab.run(dev, 0x200C, b"\x01\x00")


def stop_scanning(lab: Lab, dev: Device):
    lab.run(dev, 0x200C, b"\x00\x00")


def create_connection(lab: Lab, dev: Device, peer: str, peer_type: int = 0) -> dict:
    params = struct.pack("<HHBB6sBHHHHHH", 0x0010, 0x0010, 0x00, peer_type, addr_bytes(peer), 0x00,
                         0x0018, 0x0028, 0, 500, 0, 0)
    return lab.run(dev, 0x200D, params, allow_status=True)


def summary(label: str, out: Output, info: dict):
    if out.as_json:
        out.emit(label, dict(type="summary", **info))
        return
    print("== %s (%s)" % (label, info.get("endpoint")))
    print("   BD_ADDR %s; version %s" % (info.get("bd_addr"), info.get("version")))
    print("   LE buffers %s%s" % (info.get("le_buffers"),
                                 "; shared %s" % info["shared_buffers"] if "shared_buffers" in info else ""))
    missing = [k for k, v in info.get("supported", {}).items() if not v]
    print("   supported-commands bits NOT set: %s" % (", ".join(missing) if missing else "none"))
    for k in ("extras",):
        if k in info:
            print("   %s: %s" % (k, info[k]))


# ----------------------------------------------------------------------------------------------
# Sub-commands

def cmd_info(args, out):
    dev = Device("dev", args.endpoint, out, args.timeout)
    lab = Lab([dev])
    info = power_on(lab, dev)
    extras = {}
    for op in (0x1003, 0x2003, 0x202F, 0x2007, 0x200F, 0x201C, 0x2060):
        rec = lab.run(dev, op, check=False)
        extras[opname(op)] = {k: v for k, v in rec.items() if k not in ("type", "event", "code", "ncmd", "opcode", "command", "t", "dev")}
    info["extras"] = extras
    lab.pump(args.linger)
    summary("dev", out, info)
    return 0


def cmd_advertise(args, out):
    dev = Device("periph", args.endpoint, out, args.timeout)
    lab = Lab([dev])
    power_on(lab, dev)
    start_advertising(lab, dev, args.name)
    lab.pump(args.seconds)
    return 1 if dev.closed else 0


def cmd_scan(args, out):
    dev = Device("scan", args.endpoint, out, args.timeout)
    lab = Lab([dev])
    power_on(lab, dev)
    start_scanning(lab, dev, active=not args.passive)
    lab.pump(args.seconds)
    return 1 if dev.closed else 0


def cmd_cmd(args, out):
    dev = Device("dev", args.endpoint, out, args.timeout)
    lab = Lab([dev])
    text = args.opcode
    if ":" in text:
        ogf, ocf = text.split(":")
        op = int(ogf, 0) << 10 | int(ocf, 0)
    else:
        op = int(text, 16)
    params = bytes.fromhex(args.params or "")
    lab.run(dev, op, params, allow_status=True, check=False)
    lab.pump(args.linger)
    return 0


def cmd_pair(args, out):
    """The end-to-end check of a controller pair, as BLELab's host would drive it."""
    per = Device("periph", args.peripheral, out, args.timeout)
    cen = Device("central", args.central, out, args.timeout)
    lab = Lab([per, cen])
    timings = {}
    t = time.monotonic()
    pinfo = power_on(lab, per)
    cinfo = power_on(lab, cen)
    timings["power_on_both_s"] = time.monotonic() - t
    if pinfo["bd_addr"] == cinfo["bd_addr"]:
        raise ProbeError("both controllers report BD_ADDR %s" % pinfo["bd_addr"])
    name = args.name
    start_advertising(lab, per, name)
    if args.skip_scan:
        return connect_and_exchange(args, out, lab, per, cen, pinfo, cinfo, timings, None, None)
    t = time.monotonic()
    start_scanning(lab, cen)
    rep = lab.wait(cen, lambda e: e.get("subevent_code") == 0x02 and any(
        r["address"] == pinfo["bd_addr"] for r in e["reports"]), "advertising report from %s" % pinfo["bd_addr"],
        timeout=args.timeout)
    timings["scan_to_first_report_s"] = time.monotonic() - t
    report = next(r for r in rep["reports"] if r["address"] == pinfo["bd_addr"])
    # An active scanner should also get the scan response (event type 4) for ADV_IND.
    try:
        lab.wait(cen, lambda e: e.get("subevent_code") == 0x02 and any(
            r["address"] == pinfo["bd_addr"] and r["event_type"] == 4 for r in e["reports"]),
            "scan response report", timeout=2.0)
        saw_scan_rsp = True
    except ProbeError:
        saw_scan_rsp = False
    stop_scanning(lab, cen)
    return connect_and_exchange(args, out, lab, per, cen, pinfo, cinfo, timings, report, saw_scan_rsp)


def connect_and_exchange(args, out, lab, per, cen, pinfo, cinfo, timings, report, saw_scan_rsp):
    t = time.monotonic()
    answer = create_connection(lab, cen, pinfo["bd_addr"], report["address_type"] if report else 0)
    cc_c = lab.wait(cen, lambda e: e.get("subevent_code") in (0x01, 0x0A), "LE Connection Complete (central)")
    cc_p = lab.wait(per, lambda e: e.get("subevent_code") in (0x01, 0x0A), "LE Connection Complete (peripheral)")
    timings["create_connection_to_complete_s"] = time.monotonic() - t
    for who, cc in (("central", cc_c), ("peripheral", cc_p)):
        if cc["status"] != 0:
            raise ProbeError("%s: LE Connection Complete status %s" % (who, status_text(cc["status"])))
        if cc["role"] != who:
            raise ProbeError("%s: LE Connection Complete says role %s" % (who, cc["role"]))
    hc, hp = cc_c["handle"], cc_p["handle"]
    # An ATT Exchange MTU Request in an L2CAP basic frame on CID 4, as raw ACL both ways.
    att = bytes([0x02]) + struct.pack("<H", 247)
    frame = struct.pack("<HH", len(att), 0x0004) + att
    t = time.monotonic()
    cen.acl(hc, frame)
    got = lab.wait(per, lambda e: e.get("type") == "acl", "ACL data from the central")
    timings["acl_central_to_peripheral_s"] = time.monotonic() - t
    if bytes.fromhex(got["data_hex"]) != frame:
        raise ProbeError("peripheral received %s, sent %s" % (got["data_hex"], frame.hex()))
    nocp = lab.wait(cen, lambda e: e.get("code") == 0x13, "Number Of Completed Packets (central)")
    rsp = bytes([0x03]) + struct.pack("<H", 247)
    frame2 = struct.pack("<HH", len(rsp), 0x0004) + rsp
    t = time.monotonic()
    per.acl(hp, frame2)
    got2 = lab.wait(cen, lambda e: e.get("type") == "acl", "ACL data from the peripheral")
    timings["acl_peripheral_to_central_s"] = time.monotonic() - t
    if bytes.fromhex(got2["data_hex"]) != frame2:
        raise ProbeError("central received %s, sent %s" % (got2["data_hex"], frame2.hex()))
    lab.pump(0.2)
    t = time.monotonic()
    d = lab.run(cen, 0x0406, struct.pack("<HB", hc, 0x13), allow_status=True)
    dc_c = lab.wait(cen, lambda e: e.get("code") == 0x05, "Disconnection Complete (central)")
    dc_p = lab.wait(per, lambda e: e.get("code") == 0x05, "Disconnection Complete (peripheral)")
    timings["disconnect_s"] = time.monotonic() - t
    lab.pump(args.linger)
    result = {
        "type": "result", "ok": True,
        "peripheral_address": pinfo["bd_addr"], "central_address": cinfo["bd_addr"],
        "advertising_report": {k: report[k] for k in ("event_type", "address_type", "rssi", "ad")} if report else None,
        "scan_response_seen": saw_scan_rsp,
        "create_connection_answer": "Command Status" if answer["code"] == 0x0F else "Command Complete",
        "disconnect_answer": "Command Status" if d["code"] == 0x0F else "Command Complete",
        "connection": {k: cc_c.get(k) for k in ("interval", "latency", "supervision_timeout")},
        "central_handle": hc, "peripheral_handle": hp,
        "completed_packets": nocp["completed"],
        "disconnection_reasons": {"central": dc_c["reason"], "peripheral": dc_p["reason"]},
        "le_buffers": {"peripheral": pinfo["le_buffers"], "central": cinfo["le_buffers"]},
        "timings_s": {k: round(v, 4) for k, v in timings.items()},
    }
    if out.as_json:
        print(json.dumps(result), flush=True)
    else:
        print("PASS: " + json.dumps(result, indent=1))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each answer (5)")
    ap.add_argument("--no-quickack", action="store_true",
                    help="do not set TCP_QUICKACK before each read (shows RootCanal's ~40 ms Nagle stall)")
    ap.add_argument("--linger", type=float, default=0.3, help="seconds to keep printing events at the end (0.3)")
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("info"); p.add_argument("endpoint"); p.set_defaults(fn=cmd_info)
    p = sub.add_parser("advertise"); p.add_argument("endpoint"); p.add_argument("--name", default="h4probe")
    p.add_argument("--seconds", type=float, default=10.0); p.set_defaults(fn=cmd_advertise)
    p = sub.add_parser("scan"); p.add_argument("endpoint"); p.add_argument("--passive", action="store_true")
    p.add_argument("--seconds", type=float, default=5.0); p.set_defaults(fn=cmd_scan)
    p = sub.add_parser("pair"); p.add_argument("peripheral"); p.add_argument("central")
    p.add_argument("--name", default="h4probe-periph")
    p.add_argument("--skip-scan", action="store_true", help="connect to the advertiser's BD_ADDR without scanning first")
    p.set_defaults(fn=cmd_pair)
    p = sub.add_parser("cmd"); p.add_argument("endpoint"); p.add_argument("opcode"); p.add_argument("params", nargs="?")
    p.set_defaults(fn=cmd_cmd)
    args = ap.parse_args(argv)
    out = Output(args.json)
    global QUICKACK
    QUICKACK = not args.no_quickack
    try:
        return args.fn(args, out)
    except ConnectionError as err:
        print("h4probe: %s" % err, file=sys.stderr)
        return 2
    except ValueError as err:
        print("h4probe: %s" % err, file=sys.stderr)
        return 2
    except ProbeError as err:
        if out.as_json:
            print(json.dumps({"type": "result", "ok": False, "error": str(err)}), flush=True)
        print("h4probe: FAIL: %s" % err, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
