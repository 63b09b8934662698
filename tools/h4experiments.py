#!/usr/bin/env python3
"""The experiments behind docs/tiers.md: each drives controllers over H4 (through h4probe.py)
and prints what they did. Standard library only.

    h4experiments.py ENDPOINTS EXPERIMENT [ARG]

ENDPOINTS: comma-separated; device i uses endpoint i modulo their number, so with RootCanal
give its one HCI port (every connection is a new controller) and with Bumble one endpoint per
controller: tcp:127.0.0.1:P  or  tcp:127.0.0.1:P0,tcp:127.0.0.1:P1,tcp:127.0.0.1:P2.

    addresses          BD_ADDRs of three connections, of a fourth after closing the second, after Reset
    rate [INTERVAL]    reports per second, event types and RSSI values, passive then active scanning
    advtypes           ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND: report types and data; connecting to a
                       non-connectable advertiser; LE Create Connection Cancel
    cancel             LE Create Connection to an absent device, then Cancel
    close-peer         the peripheral's host connection closes: what the central hears
    reset-connected    the peripheral's host sends HCI Reset while connected: what the central hears
    adv-after-connect  does a connected legacy advertiser still advertise; may it re-enable
    random             advertising, scanning and connecting with random addresses
    flow N SIZE        N ACL packets of SIZE octets at once: delivered, completed
    frag               one 64-octet L2CAP PDU in three fragments: how it arrives
    update             LE Connection Update and Read RSSI on a connection
    garbage            an invalid H4 packet type on one connection; does another still answer
    many N             N simultaneous connections (RootCanal: N controllers)

Run them under with_controllers.py, e.g.
    python3 tools/with_controllers.py rootcanal -- python3 tools/h4experiments.py {ep0} advtypes
    python3 tools/with_controllers.py bumble 3 -- python3 tools/h4experiments.py {endpoints} advtypes
"""

from __future__ import annotations

import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h4probe as h  # noqa: E402

REPORTS = (0x02, 0x0D)  # legacy and extended advertising reports


def quiet_output():
    out = h.Output(False)
    out.emit = lambda *a, **k: None
    return out


class Bench:
    def __init__(self, endpoints):
        self.endpoints = endpoints

    def devices(self, n, power_on=True):
        ds = [h.Device("d%d" % i, self.endpoints[i % len(self.endpoints)], quiet_output(), 5.0) for i in range(n)]
        lab = h.Lab(ds)
        infos = [h.power_on(lab, d) for d in ds] if power_on else []
        return lab, ds, infos

    @staticmethod
    def reports(dev, address=None):
        return [r for e in dev.events if e.get("subevent_code") in REPORTS for r in e["reports"]
                if address is None or r["address"] == address]

    @staticmethod
    def connect(lab, p, c, pinfo):
        h.start_advertising(lab, p, "exp")
        h.start_scanning(lab, c)
        lab.wait(c, lambda e: e.get("subevent_code") in REPORTS and any(r["address"] == pinfo["bd_addr"] for r in e["reports"]),
                 "advertising report")
        h.stop_scanning(lab, c)
        h.create_connection(lab, c, pinfo["bd_addr"])
        cc = lab.wait(c, lambda e: e.get("subevent_code") == 1, "LE Connection Complete (central)")
        pc = lab.wait(p, lambda e: e.get("subevent_code") == 1, "LE Connection Complete (peripheral)")
        return cc["handle"], pc["handle"]


def addresses(b, args):
    lab, ds, _ = b.devices(3, power_on=False)
    for d in ds:
        print(d.label, lab.run(d, 0x1009)["bd_addr"])
    ds[1].sock.close()
    ds[1].closed = True
    time.sleep(0.3)
    last = None
    for label in ("new1", "new2"):
        d = h.Device(label, b.endpoints[1 % len(b.endpoints)], quiet_output(), 5.0)
        lab.devices.append(d)
        try:
            print("%s (after closing d1): %s" % (label, lab.run(d, 0x1009)["bd_addr"]))
            last = d
        except h.ProbeError as err:  # a Bumble lab endpoint takes one host at a time
            print("%s (after closing d1): refused: %s" % (label, err))
    lab.run(last, 0x0C03)
    print("after Reset: %s" % lab.run(last, 0x1009)["bd_addr"])


def rate(b, args):
    lab, (p, c), _ = b.devices(2)
    h.start_advertising(lab, p, "rate", interval_units=int(args[0], 0) if args else 0xA0)
    for active in (False, True):
        h.start_scanning(lab, c, active=active)
        c.events.clear()
        lab.pump(3.0)
        reps = b.reports(c)
        by_type = {}
        for r in reps:
            by_type.setdefault(r["event_type"], []).append(r["rssi"])
        print("%s scanning: %d reports in 3 s; per event type, the RSSI values in order: %s"
              % ("active" if active else "passive", len(reps), {t: v[:40] for t, v in sorted(by_type.items())}))
        h.stop_scanning(lab, c)


def advtypes(b, args):
    lab, (p, c), (pi, ci) = b.devices(2)
    sr = h.ad_name("scanrsp")
    h.start_scanning(lab, c, active=True)
    for t in (0, 2, 3):
        lab.run(p, 0x200A, b"\x00")
        lab.run(p, 0x2006, struct.pack("<HHBBB6sBB", 0xA0, 0xA0, t, 0, 0, bytes(6), 7, 0))
        d = h.ad_name("adv%d" % t)
        lab.run(p, 0x2008, bytes([len(d)]) + d.ljust(31, b"\0"))
        lab.run(p, 0x2009, bytes([len(sr)]) + sr.ljust(31, b"\0"))
        lab.run(p, 0x200A, b"\x01")
        lab.pump(0.3)
        c.events.clear()
        lab.pump(0.6)
        reps = b.reports(c, pi["bd_addr"])
        print("advertising type %d: (report type, name) seen: %s" % (t, sorted(set((r["event_type"], r["ad"].get("name")) for r in reps))))
    h.stop_scanning(lab, c)
    h.create_connection(lab, c, pi["bd_addr"])
    try:
        lab.wait(c, lambda e: e.get("subevent_code") == 1, "connection", timeout=1.0)
        print("connected to an ADV_NONCONN_IND advertiser")
    except h.ProbeError:
        print("no connection to the ADV_NONCONN_IND advertiser within 1 s")
    lab.run(c, 0x200E)
    try:
        e = lab.wait(c, lambda e: e.get("subevent_code") == 1, "LE Connection Complete after Cancel")
        print("LE Create Connection Cancel -> LE Connection Complete, status %s" % h.status_text(e["status"]))
    except h.ProbeError as err:
        print(err)


def cancel(b, args):
    lab, (c,), _ = b.devices(1)
    a = h.create_connection(lab, c, "C0:11:22:33:44:55")
    print("LE Create Connection -> %s" % ("Command Status" if a["code"] == 0x0F else "Command Complete"))
    lab.pump(0.5)
    r = lab.run(c, 0x200E, check=False)
    print("LE Create Connection Cancel -> status %s" % h.status_text(r["status"]))
    try:
        e = lab.wait(c, lambda e: e.get("subevent_code") == 1, "LE Connection Complete after Cancel")
        print("then LE Connection Complete, status %s, peer %s" % (h.status_text(e["status"]), e["peer_address"]))
    except h.ProbeError as err:
        print(err)


def close_peer(b, args):
    lab, (p, c), (pi, ci) = b.devices(2)
    b.connect(lab, p, c, pi)
    t = time.monotonic()
    p.sock.close()
    p.closed = True
    lab.devices.remove(p)
    e = lab.wait(c, lambda e: e.get("code") == 5, "Disconnection Complete", timeout=10)
    print("the peripheral's host connection closed -> central: Disconnection Complete, reason 0x%02x, after %.3f s"
          % (e["reason"], time.monotonic() - t))


def reset_connected(b, args):
    lab, (p, c), (pi, ci) = b.devices(2)
    b.connect(lab, p, c, pi)
    t = time.monotonic()
    lab.run(p, 0x0C03)
    try:
        e = lab.wait(c, lambda e: e.get("code") == 5, "Disconnection Complete", timeout=10)
        print("peripheral Reset -> central: Disconnection Complete, reason 0x%02x, after %.3f s" % (e["reason"], time.monotonic() - t))
    except h.ProbeError as err:
        print(err)


def adv_after_connect(b, args):
    lab, (p, c, s), (pi, ci, si) = b.devices(3)
    b.connect(lab, p, c, pi)
    h.start_scanning(lab, s)
    s.events.clear()
    lab.pump(1.0)
    print("a third scanner sees the connected legacy advertiser %d times in 1 s" % len(b.reports(s, pi["bd_addr"])))
    r = lab.run(p, 0x200A, b"\x01", check=False)
    print("re-enabling advertising while connected: status %s" % h.status_text(r["status"]))
    s.events.clear()
    lab.pump(1.0)
    reps = b.reports(s, pi["bd_addr"])
    print("then the third scanner sees %d reports, types %s" % (len(reps), sorted(set(r["event_type"] for r in reps))))


def random_addresses(b, args):
    lab, (p, c), _ = b.devices(2)
    rnd = "C1:22:33:44:55:66"
    lab.run(p, 0x2005, h.addr_bytes(rnd))
    lab.run(p, 0x2006, struct.pack("<HHBBB6sBB", 0xA0, 0xA0, 0, 0x01, 0, bytes(6), 7, 0))
    d = h.ad_name("rnd")
    lab.run(p, 0x2008, bytes([len(d)]) + d.ljust(31, b"\0"))
    lab.run(p, 0x200A, b"\x01")
    lab.run(c, 0x2005, h.addr_bytes("C1:99:88:77:66:55"))
    lab.run(c, 0x200B, struct.pack("<BHHBB", 1, 0x10, 0x10, 0x01, 0))
    lab.run(c, 0x200C, b"\x01\x00")
    e = lab.wait(c, lambda e: e.get("subevent_code") in REPORTS and any(r["address"] == rnd for r in e["reports"]), "report")
    print("report: %s" % [(r["address"], r["address_type"]) for r in e["reports"]])
    h.stop_scanning(lab, c)
    lab.run(c, 0x200D, struct.pack("<HHBB6sBHHHHHH", 0x10, 0x10, 0, 1, h.addr_bytes(rnd), 1, 0x18, 0x28, 0, 500, 0, 0),
            allow_status=True)
    cc = lab.wait(c, lambda e: e.get("subevent_code") == 1, "LE Connection Complete")
    pc = lab.wait(p, lambda e: e.get("subevent_code") == 1, "LE Connection Complete")
    print("central's peer %s type %d; peripheral's peer %s type %d"
          % (cc["peer_address"], cc["peer_address_type"], pc["peer_address"], pc["peer_address_type"]))


def flow(b, args):
    n, size = (int(args[0]), int(args[1])) if len(args) == 2 else (25, 27)
    lab, (p, c), (pi, ci) = b.devices(2)
    hc, hp = b.connect(lab, p, c, pi)
    payload = bytes(i & 0xFF for i in range(max(size - 4, 0)))
    frame = struct.pack("<HH", len(payload), 0x0040) + payload
    for _ in range(n):
        c.sock.sendall(bytes([2]) + struct.pack("<HH", hc, len(frame)) + frame)
    lab.pump(3.0)
    got = [e for e in p.events if e.get("type") == "acl"]
    nocp = [e for e in c.events if e.get("code") == 0x13]
    done = sum(x["count"] for e in nocp for x in e["completed"])
    print("sent %d ACL packets of %d octets at once: the peer got %d (sizes %s); Number Of Completed Packets: %d events, %d packets"
          % (n, len(frame), len(got), sorted(set(len(e["data_hex"]) // 2 for e in got)), len(nocp), done))


def frag(b, args):
    lab, (p, c), (pi, ci) = b.devices(2)
    hc, hp = b.connect(lab, p, c, pi)
    payload = bytes(range(60))
    pdu = struct.pack("<HH", len(payload), 0x0004) + payload
    frags = [pdu[i:i + 27] for i in range(0, len(pdu), 27)]
    for i, f in enumerate(frags):
        c.sock.sendall(bytes([2]) + struct.pack("<HH", hc | ((0 if i == 0 else 1) << 12), len(f)) + f)
    lab.pump(1.0)
    got = [e for e in p.events if e.get("type") == "acl"]
    print("one %d-octet L2CAP PDU sent as %d fragments (pb 0, 1, 1): the peer got %d ACL packets (pb, length): %s"
          % (len(pdu), len(frags), len(got), [(e["pb"], len(e["data_hex"]) // 2) for e in got]))


def update(b, args):
    lab, (p, c), (pi, ci) = b.devices(2)
    hc, hp = b.connect(lab, p, c, pi)
    r = lab.run(c, 0x2013, struct.pack("<HHHHHHH", hc, 0x30, 0x30, 0, 600, 0, 0), allow_status=True)
    print("LE Connection Update -> %s, %s" % ("Command Status" if r["code"] == 0x0F else "Command Complete", h.status_text(r["status"])))
    for d in (c, p):
        try:
            e = lab.wait(d, lambda e: e.get("subevent_code") == 3, "LE Connection Update Complete", timeout=3)
            print("%s: LE Connection Update Complete %s, interval %d, timeout %d"
                  % (d.label, h.status_text(e["status"]), e["interval"], e["supervision_timeout"]))
        except h.ProbeError as err:
            print(err)
    r = lab.run(c, 0x1405, struct.pack("<H", hc), check=False)
    print("Read RSSI -> %s, RSSI %s" % (h.status_text(r["status"]), r.get("rssi")))


def garbage(b, args):
    lab, (a, c), _ = b.devices(2)
    a.sock.sendall(b"\x07\x01\x02\x03")
    lab.pump(1.0)
    print("after an invalid packet type, the connection is %s" % ("closed" if a.closed else "still open"))
    print("another connection still answers Read BD_ADDR: %s" % lab.run(c, 0x1009)["bd_addr"])


def many(b, args):
    n = int(args[0]) if args else 8
    ds = [None] * n

    def go(i):
        ds[i] = h.Device("d%d" % i, b.endpoints[i % len(b.endpoints)], quiet_output(), 5.0)

    t = time.monotonic()
    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    lab = h.Lab(ds)
    addrs = [lab.run(d, 0x1009)["bd_addr"] for d in ds]
    print("%d simultaneous connections answered in %.3f s: %s" % (n, time.monotonic() - t, sorted(addrs)))


EXPERIMENTS = {
    "addresses": addresses, "rate": rate, "advtypes": advtypes, "cancel": cancel, "close-peer": close_peer,
    "reset-connected": reset_connected, "adv-after-connect": adv_after_connect, "random": random_addresses,
    "flow": flow, "frag": frag, "update": update, "garbage": garbage, "many": many,
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[1] not in EXPERIMENTS:
        print(__doc__, file=sys.stderr)
        return 2
    bench = Bench(argv[0].split(","))
    try:
        EXPERIMENTS[argv[1]](bench, argv[2:])
    except (h.ProbeError, ConnectionError) as err:
        print("h4experiments: %s" % err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
