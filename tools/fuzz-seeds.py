#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (docs/fuzzing.md) from the project's own captures and scenarios.

    tools/fuzz-seeds.py OUT_DIR [CAPTURE_OR_DIR ...]

Captures are btsnoop files (the tests' fixtures, and the sim's captures of every scenario when
`make e2e` left them in build/e2e/captures) and air captures (`*.air.pcap`, in build/e2e/air); scenarios are every .yaml under scenarios/ and the
scenario tests' fixtures. OUT_DIR/<target>/ gets one file per seed; nothing is committed.

Harnesses that take a sequence of messages (h4, l2cap, gatt-client, gatt-server, host) read
each message as one length octet and that many octets (Fuzzing/Support/FuzzInput.swift), so the
seeds are written in that form; longer messages are cut at 255 octets.
"""
import hashlib
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def btsnoop_records(path):
    """(received_by_host, h4_frame) per record of a btsnoop file (datalink 1002, H4)."""
    data = open(path, "rb").read()
    if data[:8] != b"btsnoop\0" or len(data) < 16:
        return []
    datalink = struct.unpack(">I", data[12:16])[0]
    out, i = [], 16
    while i + 24 <= len(data):
        _orig, incl, flags, _drops, _ts = struct.unpack(">IIIIq", data[i:i + 24])
        frame = data[i + 24:i + 24 + incl]
        i += 24 + incl
        if datalink == 1001:  # unencapsulated: the flags say commands/events
            indicator = (4 if flags & 1 else 1) if flags & 2 else 2
            frame = bytes([indicator]) + frame
        out.append((bool(flags & 1), frame))
    return out


def messages(chunks):
    out = bytearray()
    for chunk in chunks:
        chunk = chunk[:255]
        out.append(len(chunk))
        out += chunk
    return bytes(out)


def l2cap_pdus(frames):
    """Whole L2CAP basic frames per direction from H4 ACL frames (start + continuations)."""
    pending, pdus = {}, []
    for frame in frames:
        if len(frame) < 5 or frame[0] != 2:
            continue
        handle = struct.unpack("<H", frame[1:3])[0]
        pb = (handle >> 12) & 3
        payload = frame[5:]
        if pb in (0, 2):
            pending[handle & 0xFFF] = bytearray(payload)
        elif (handle & 0xFFF) in pending:
            pending[handle & 0xFFF] += payload
        buf = pending.get(handle & 0xFFF)
        if buf is not None and len(buf) >= 4 and len(buf) - 4 >= struct.unpack("<H", buf[0:2])[0]:
            pdus.append(bytes(buf))
            del pending[handle & 0xFFF]
    return pdus


def att_pdus(frames):
    return [p[4:] for p in l2cap_pdus(frames) if struct.unpack("<H", p[2:4])[0] == 4]


def advertising_data(frames):
    """AD from LE Advertising Reports (events) and LE Set Advertising/Scan Response Data (commands)."""
    out = []
    for f in frames:
        if f[:1] == b"\x04" and len(f) > 4 and f[1] == 0x3E and f[3] == 0x02:
            i, n = 5, f[4]
            for _ in range(n):
                if i + 9 > len(f):
                    break
                length = f[i + 8]
                out.append(f[i + 9:i + 9 + length])
                i += 9 + length + 1
        elif f[:1] == b"\x01" and len(f) > 5 and f[1:3] in (b"\x08\x20", b"\x09\x20"):
            out.append(f[5:5 + f[4]])
    return [a for a in out if a]


def dbus_seeds():
    """A few D-Bus messages in the wire format (little-endian, protocol 1): a method call, a
    method return with a string, an error, InterfacesAdded and PropertiesChanged as BlueZ sends."""
    def pad(b, n):
        return b + b"\0" * (-len(b) % n)

    class W:
        def __init__(self):
            self.b = bytearray()

        def align(self, n):
            self.b += b"\0" * (-len(self.b) % n)

        def u8(self, v): self.b.append(v)
        def u32(self, v): self.align(4); self.b += struct.pack("<I", v)
        def i16(self, v): self.align(2); self.b += struct.pack("<h", v)
        def boolean(self, v): self.u32(1 if v else 0)

        def string(self, s):
            s = s.encode()
            self.u32(len(s)); self.b += s + b"\0"

        def sig(self, s):
            s = s.encode()
            self.u8(len(s)); self.b += s + b"\0"

    def message(kind, serial, fields, signature, body_writer):
        body = W()
        if body_writer:
            body_writer(body)
        h = W()
        h.b += b"l" + bytes([kind, 0, 1])
        h.u32(len(body.b))
        h.u32(serial)
        arr = W()
        arr.b = bytearray(h.b)
        arr.u32(0)
        start = len(arr.b)
        for code, typ, value in fields + ([(8, "g", signature)] if signature else []):
            arr.align(8)
            arr.u8(code)
            arr.sig(typ)
            (arr.sig if typ == "g" else arr.u32 if typ == "u" else arr.string)(value)
        length = len(arr.b) - start
        arr.b[12:16] = struct.pack("<I", length)
        arr.align(8)
        return bytes(arr.b) + bytes(body.b)

    def variant_string(w, s): w.sig("s"); w.string(s)

    def interfaces_added(w):
        w.string("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF")  # o
        w.u32(0)  # a{sa{sv}} length placeholder
        at = len(w.b)
        w.align(8)
        first = len(w.b)
        w.align(8); w.string("org.bluez.Device1")
        w.u32(0); inner_at = len(w.b); w.align(8); inner_first = len(w.b)
        w.align(8); w.string("Address"); variant_string(w, "AA:BB:CC:DD:EE:FF")
        w.align(8); w.string("RSSI"); w.sig("n"); w.i16(-60)
        w.align(8); w.string("Connected"); w.sig("b"); w.boolean(False)
        w.b[inner_at - 4:inner_at] = struct.pack("<I", len(w.b) - inner_first)
        w.b[at - 4:at] = struct.pack("<I", len(w.b) - first)

    def properties_changed(w):
        w.string("org.bluez.GattCharacteristic1")
        w.u32(0); at = len(w.b); w.align(8); first = len(w.b)
        w.align(8); w.string("Value"); w.sig("ay"); w.u32(3); w.b += b"\x01\x02\x03"
        w.b[at - 4:at] = struct.pack("<I", len(w.b) - first)
        w.u32(1); w.string("Notifying")

    return {
        "method-call": message(1, 1, [(1, "o", "/org/bluez/hci0"), (2, "s", "org.bluez.Adapter1"), (3, "s", "StartDiscovery"),
                                      (6, "s", "org.bluez")], "", None),
        "method-return": message(2, 2, [(5, "u", 1), (6, "s", ":1.7")], "s", lambda w: w.string("hello")),
        "error": message(3, 3, [(4, "s", "org.bluez.Error.Failed"), (5, "u", 1)], "s", lambda w: w.string("Operation failed")),
        "interfaces-added": message(4, 4, [(1, "o", "/"), (2, "s", "org.freedesktop.DBus.ObjectManager"), (3, "s", "InterfacesAdded")],
                                    "oa{sa{sv}}", interfaces_added),
        "properties-changed": message(4, 5, [(1, "o", "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF/service0001/char0002"),
                                             (2, "s", "org.freedesktop.DBus.Properties"), (3, "s", "PropertiesChanged")],
                                      "sa{sv}as", properties_changed),
    }


def packetlogger(records, big_endian=True):
    fmt = ">" if big_endian else "<"
    out, t = bytearray(), 1_700_000_000 * 1_000_000
    for received, frame in records:
        kind = {1: 0x00, 4: 0x01}.get(frame[0], 0x03 if received else 0x02) if frame[0] in (1, 2, 4) else None
        if kind is None:
            continue
        out += struct.pack(fmt + "III", 9 + len(frame) - 1, t // 1_000_000, t % 1_000_000) + bytes([kind]) + frame[1:]
        t += 1250
    return bytes(out)


def pcap(records, link_type=201, big_endian=True, nanoseconds=False):
    """A pcap file of link type 201 (direction header), 187 (bare H4) or 254 (Linux monitor)."""
    fmt = ">" if big_endian else "<"
    out = bytearray(struct.pack(fmt + "IHHiIII", 0xA1B23C4D if nanoseconds else 0xA1B2C3D4, 2, 4, 0, 0, 65535, link_type))
    t = 1_700_000_000 * 1_000_000
    for data in link_records(records, link_type):
        out += struct.pack(fmt + "IIII", t // 1_000_000, (t % 1_000_000) * (1000 if nanoseconds else 1), len(data), len(data)) + data
        t += 1250
    return bytes(out)


def link_records(records, link_type):
    if link_type == 254:
        yield struct.pack(">HH", 0, 0) + bytes(8) + b"hci0"   # New Index
        yield struct.pack(">HH", 0xFFFF, 12) + b"note\0"      # System Note
    for received, frame in records:
        if link_type == 201:
            yield struct.pack(">I", 1 if received else 0) + frame
        elif link_type == 187:
            yield frame
        else:
            opcode = {1: 2, 4: 3, 2: 5 if received else 4, 3: 7 if received else 6, 5: 19 if received else 18}.get(frame[0])
            if opcode is not None:
                yield struct.pack(">HH", 0, opcode) + frame[1:]


def pcapng(records, link_type=201, big_endian=True, simple=False):
    """A pcapng file: a Section Header Block, one Interface Description Block (with if_tsresol 9 and
    a second interface of link type 187), then Enhanced (or Simple) Packet Blocks."""
    fmt = ">" if big_endian else "<"

    def block(kind, body):
        body += bytes(-len(body) % 4)
        return struct.pack(fmt + "II", kind, 12 + len(body)) + body + struct.pack(fmt + "I", 12 + len(body))

    out = bytearray(block(0x0A0D0D0A, struct.pack(fmt + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
    out += block(1, struct.pack(fmt + "HHI", link_type, 0, 262144) + struct.pack(fmt + "HH", 9, 1) + b"\x09\0\0\0"
                 + struct.pack(fmt + "HH", 0, 0))
    out += block(1, struct.pack(fmt + "HHI", 187, 0, 262144))
    t = 1_700_000_000 * 1_000_000_000
    for data in link_records(records, link_type):
        if simple:
            out += block(3, struct.pack(fmt + "I", len(data)) + data)
        else:
            out += block(6, struct.pack(fmt + "IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data), len(data)) + data)
        t += 1_250_000
    return bytes(out)


def air_records(path):
    """(seconds, microseconds, packet) per record of an air capture `blelab run --capture-air` wrote
    (pcap, little-endian, link type 256: a 10-octet pseudo-header, then the link-layer packet)."""
    data = open(path, "rb").read()
    if len(data) < 24 or struct.unpack("<I", data[:4])[0] != 0xA1B2C3D4 or struct.unpack("<I", data[20:24])[0] != 256:
        return []
    out, i = [], 24
    while i + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack("<IIII", data[i:i + 16])
        out.append((sec, usec, data[i + 16:i + 16 + incl]))
        i += 16 + incl
    return out


def crc24(pdu, init):
    """CRC-24 of an LE PDU (Core Vol 6 Part B 3.1.1), as stored after it."""
    state = init
    for octet in pdu:
        for i in range(8):
            feedback = ((state >> 23) ^ (octet >> i)) & 1
            state = (state << 1) & 0xFFFFFF
            if feedback:
                state ^= 0x00065B
    rev = lambda b: int("{:08b}".format(b)[::-1], 2)
    return bytes([rev((state >> 16) & 0xFF), rev((state >> 8) & 0xFF), rev(state & 0xFF)])


def builtin_air_records():
    """A tiny air capture when no `make e2e` left any: ADV_IND, CONNECT_IND, an ATT request and an
    LL_TERMINATE_IND, in link type 256."""
    adv_aa, aa, crc_init = 0x8E89BED6, 0x50657B27, 0x123456
    advertiser, initiator = bytes.fromhex("112233445566"), bytes.fromhex("0155443322c1")
    def packet(access, pdu, init, direction=None):
        flags = 0x0C03 | ((0x10 | (2 if direction else 3) << 7) if direction is not None else 0)
        phdr = bytes([0 if access == adv_aa else 5, 0xCE, 0, 0]) + struct.pack("<IH", 0 if access == adv_aa else access, flags)
        return phdr + struct.pack("<I", access) + pdu + crc24(pdu, init)
    adv = bytes([0x00, 9]) + advertiser + bytes([2, 1, 6])
    lldata = struct.pack("<I", aa) + crc_init.to_bytes(3, "little") + bytes([1]) + struct.pack("<HHHH", 0, 24, 0, 500) \
        + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 7])
    connect = bytes([0x45, 34]) + initiator + advertiser + lldata
    request = bytes([0x02, 11, 7, 0, 4, 0, 0x10, 1, 0, 0xFF, 0xFF, 0, 0x28])
    terminate = bytes([0x0B, 2, 0x02, 0x13])
    return [(0, 0, packet(adv_aa, adv, 0x555555)), (0, 400, packet(adv_aa, connect, 0x555555)),
            (0, 2002, packet(aa, request, crc_init, True)), (0, 32002, packet(aa, terminate, crc_init, True))]


def air_files(records):
    """An air capture in each container and link type: pcap 256 (as written), pcapng 256, pcap 251
    (the pseudo-header dropped) and pcap 272 (the nRF Sniffer's header in its place)."""
    def pcap_file(link_type, packets):
        out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, link_type))
        for sec, usec, data in packets:
            out += struct.pack("<IIII", sec, usec, len(data), len(data)) + data
        return bytes(out)

    def block(kind, body):
        body += bytes(-len(body) % 4)
        return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    ng = bytearray(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
    ng += block(1, struct.pack("<HHI", 256, 0, 262144))
    for sec, usec, data in records:
        t = sec * 1_000_000 + usec
        ng += block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data), len(data)) + data)

    def nordic(data):
        phdr, packet = data[:10], data[10:]
        flags = struct.unpack("<H", phdr[8:10])[0]
        crc_ok = 1 if flags & 0x0800 or not flags & 0x0400 else 0
        central = 2 if (flags >> 7) & 7 == 2 else 0
        header = bytes([6, 10 + len(packet), 2, 0, 0, 6])
        return bytes([0]) + header + bytes([10, crc_ok | central, 37, (-struct.unpack("<b", phdr[1:2])[0]) & 0xFF, 0, 0, 0, 0, 0, 0]) + packet

    return [pcap_file(256, records), bytes(ng), pcap_file(251, [(s, u, d[10:]) for s, u, d in records]),
            pcap_file(272, [(s, u, nordic(d)) for s, u, d in records])]


def main():
    out_dir = sys.argv[1]
    captures, airs = [], []
    for arg in sys.argv[2:] or [os.path.join(ROOT, "Tests/TransportTests/Fixtures")]:
        if os.path.isdir(arg):
            for base, _, files in os.walk(arg):
                captures += [os.path.join(base, f) for f in sorted(files) if f.endswith(".btsnoop")]
                airs += [os.path.join(base, f) for f in sorted(files) if f.endswith(".air.pcap")]
        elif arg.endswith(".air.pcap") and os.path.exists(arg):
            airs.append(arg)
        elif os.path.exists(arg):
            captures.append(arg)
    yamls = []
    for d in ("scenarios", "Tests/ScenarioEngineTests/Fixtures", "examples"):
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            yamls += [os.path.join(base, f) for f in sorted(files) if f.endswith((".yaml", ".yml"))]

    seeds = {}

    def add(target, blob):
        if blob:
            seeds.setdefault(target, {})[hashlib.sha1(blob).hexdigest()[:16]] = blob

    for path in sorted(captures):
        records = btsnoop_records(path)
        if not records:
            continue
        raw = open(path, "rb").read()
        add("btsnoop", raw)
        add("capture-import", raw)
        pklg = packetlogger(records)
        add("packetlogger", pklg)
        add("packetlogger", packetlogger(records[:20], big_endian=False))
        add("capture-import", pklg)
        add("pcap", pcapng(records))
        add("pcap", pcapng(records[:30], big_endian=False))
        add("pcap", pcapng(records[:30], link_type=187, simple=True))
        add("pcap", pcapng(records[:30], link_type=254))
        add("pcap", pcap(records[:30]))
        add("pcap", pcap(records[:30], big_endian=False, nanoseconds=True))
        add("pcap", pcap(records[:30], link_type=254, big_endian=False))
        add("capture-import", pcapng(records))
        frames = [f for _, f in records]
        to_host = [f for received, f in records if received]
        from_host = [f for received, f in records if not received]
        # The H4 stream cut at frame boundaries, and at 7 octets.
        add("h4", messages(to_host))
        stream = b"".join(to_host)
        add("h4", messages(stream[i:i + 7] for i in range(0, min(len(stream), 2000), 7)))
        for f in frames:
            if f[0] == 4:
                add("hci-event", f[1:])
            elif f[0] == 1:
                add("hci-command", f[1:])
        for role in (0, 1):
            acl = [f[1:] for f in to_host if f[0] == 2]
            add("l2cap", messages([bytes([role | 2])] + acl))
            add("l2cap", messages([bytes([role])] + acl[:8]))
        received_att = att_pdus(to_host)
        sent_att = att_pdus(from_host)
        for pdu in received_att + sent_att:
            add("att-pdu", pdu)
        # The side whose peer answered requests is a client; the side that got requests a server.
        requests = [p for p in received_att if p and p[0] in (0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52, 0x1E)]
        if requests:
            add("gatt-server", messages(received_att))
        else:
            add("gatt-client", messages(received_att))
        for ad in advertising_data(frames):
            add("advertising-data", ad)
        # Fuzzing/Host connects as central for an input of odd length, advertises for an even
        # one: an empty message (one octet, 0) makes the length fit the capture's side.
        central = any(f[:3] == b"\x01\x0d\x20" for f in from_host)
        for frames in (to_host, to_host[:40]):
            blob = messages(frames)
            if len(blob) % 2 != (1 if central else 0):
                blob += b"\0"
            add("host", blob)
    # Air captures (`blelab run --capture-air`, which `make e2e` writes to build/e2e/air), each in
    # every container and link type; a built-in one when there are none.
    for records in [air_records(p) for p in sorted(airs)] + [builtin_air_records()]:
        if not records:
            continue
        for i, blob in enumerate(air_files(records)):
            add("air", blob)
            add("air", air_files(records[:40])[i])
            if i == 0:
                add("capture-import", blob)
                add("pcap", blob)
    # Whatever the captures lacked: a server's typical answers and a client's typical requests.
    add("gatt-client", messages([bytes.fromhex(h) for h in (
        "03 f7 00", "11 06 01 00 05 00 00 18 06 00 09 00 01 18", "01 10 0a 00 0a",
        "09 07 02 00 02 03 00 00 2a", "01 08 04 00 0a", "05 01 09 00 02 29", "0b 42 4c 45", "13", "1b 0c 00 01", "1d 08 00 01 00 09 00")]))
    add("gatt-server", messages([bytes.fromhex(h) for h in (
        "02 f7 00", "10 01 00 ff ff 00 28", "08 01 00 ff ff 03 28", "04 0d 00 0d 00", "0a 03 00", "0c 0c 00 02 00",
        "12 0d 00 01 00", "52 0c 00 41", "16 13 00 00 00 41 42", "18 01", "1e", "0e 03 00 05 00", "06 01 00 ff ff 00 28 0d 18",
        "20 01 00 ff ff 00 28")]))
    # SMP (Fuzzing/SMP): the first message picks both devices' settings; an empty message lets
    # the real command through. One seed per method and a few with a command replaced.
    for choice in ("03 00 03 00 00 01", "0b 00 0b 00 00 02", "1a 01 18 01 00 03", "19 09 1c 09 00 04",
                   "11 03 11 03 00 05", "03 04 03 04 00 06", "0b 04 0b 0c 00 07", "13 4c 13 4c 00 08", "83 00 83 80 00 09"):
        c = bytes.fromhex(choice)
        add("smp", messages([c]))
        add("smp", messages([c, b"", b"", bytes.fromhex("04" + "00" * 16)]))
        add("smp", messages([c, b"", b"", b"", bytes.fromhex("0c" + "11" * 64)]))
        add("smp", messages([c, bytes.fromhex("01 05 00 2d 06 00 00")]))
    for name, blob in dbus_seeds().items():
        add("dbus", blob)
    for path in yamls:
        text = open(path, "rb").read()
        add("yaml", text)
        add("scenario", text)

    for target, blobs in sorted(seeds.items()):
        d = os.path.join(out_dir, target)
        os.makedirs(d, exist_ok=True)
        for name, blob in blobs.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(blob)
        print(f"{target}: {len(blobs)} seeds")


if __name__ == "__main__":
    main()
