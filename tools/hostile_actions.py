"""The hostile peer's repertoire (tools/hostile_peer.py): what it sends to BLELab's host and what
BLELab must report and answer for each, by the Core Specification 5.4.

Each action is an async function of a round context (`ctx`, tools/hostile_peer.py's `Round`):
it sends octets (`ctx.send` a whole L2CAP basic frame on a CID, `ctx.raw` one ACL fragment with
its packet boundary flag as given), declares what BLELab's host must report for it
(`ctx.expect(layer, kind, answer)`, in the order BLELab will see it) and waits for the answer on
the link (`ctx.answer(matcher, what)`), or for BLELab to end the link when that is its answer
(`ctx.dropped(reason, what)`: the round ends there). Benign actions (normal traffic mixed in)
declare nothing and check their normal answer. `ctx.att_mtu`, `ctx.server_rx_mtu` and
`ctx.mtu_requests` are what the round knows of BLELab's ATT_MTU; `ctx.fail(text)` records a
wrong answer found by looking inside one.

`answer` is BLELab's own token for what it sent back (ProtocolViolation.Answer.token):
"none", "command-reject 0x0000", "connection-parameters-rejected", "pairing-failed 0x07",
"error-response 0x0a 0x04", "disconnect 0x13" (it ended the link).

ACTIONS lists them with the BLELab roles each applies to and a weight.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Awaitable, Callable

ATT, SIG, SMP = 0x0004, 0x0005, 0x0006
BOTH = ("peripheral", "central")

# Read By Type Request for the Device Name (0x2A00) over the whole range: the probe of liveness
# (every GATT server has it) and the benign request most actions end with.
READ_DEVICE_NAME = bytes.fromhex("08 0100 ffff 002a")


def le16(v: int) -> bytes:
    return struct.pack("<H", v & 0xFFFF)


def l2cap(cid: int, payload: bytes, length: int = None) -> bytes:
    """A basic frame (Vol 3 Part A 3.1); `length` overrides the Length field."""
    return le16(len(payload) if length is None else length) + le16(cid) + payload


def sig_command(code: int, ident: int, data: bytes, length: int = None) -> bytes:
    """An LE signaling command (Vol 3 Part A 4); `length` overrides the Length field."""
    return bytes([code, ident]) + le16(len(data) if length is None else length) + data


# -- matchers of BLELab's answers ---------------------------------------------------------------

def command_reject(ident: int, reason: int, data: bytes = b""):
    want = sig_command(0x01, ident, le16(reason) + data)
    return lambda cid, pdu: cid == SIG and pdu == want


def update_response(ident: int, result: int):
    want = sig_command(0x13, ident, le16(result))
    return lambda cid, pdu: cid == SIG and pdu == want


def pairing_failed(reason: int):
    want = bytes([0x05, reason])
    return lambda cid, pdu: cid == SMP and pdu == want


def error_response(request_opcode: int, code: int, handle: int = None):
    """An ATT Error Response (Part F 3.4.1.1) to `request_opcode` with `code`, naming `handle` when given."""
    want = None if handle is None else le16(handle)
    return lambda cid, pdu: (cid == ATT and len(pdu) == 5 and pdu[0] == 0x01 and pdu[1] == request_opcode and pdu[4] == code
                             and (want is None or pdu[2:4] == want))


def att_opcode(opcode: int):
    return lambda cid, pdu: cid == ATT and pdu[:1] == bytes([opcode])


def rnd(ctx, lo: int, hi: int) -> bytes:
    return bytes(ctx.rng.randrange(256) for _ in range(ctx.rng.randint(lo, hi)))


async def benign_read(ctx, why: str):
    await ctx.answer(att_opcode(0x09), "Read By Type Response to the Device Name read (%s)" % why)


# -- L2CAP basic frames and ACL fragments (Vol 3 Part A 2.1, 3.1, 7.2; Vol 4 Part E 5.4.2) --------

UNKNOWN_CIDS = [0x0000, 0x0001, 0x0002, 0x0003, 0x0007, 0x001F, 0x0020, 0x003E, 0x003F, 0x0040, 0x0041, 0x007F, 0x0080,
                0x1234, 0xFFFF]


async def l2cap_unknown_cid(ctx):
    cid = ctx.rng.choice(UNKNOWN_CIDS)
    ctx.send(cid, rnd(ctx, 0, 12))
    ctx.expect("l2cap", "unknown-channel", "none")


async def l2cap_continuation_without_start(ctx):
    ctx.raw(0b01, rnd(ctx, 1, 12))
    ctx.expect("l2cap", "unexpected-continuation", "none")


async def l2cap_incomplete_then_new_start(ctx):
    payload = READ_DEVICE_NAME[: ctx.rng.randint(0, len(READ_DEVICE_NAME) - 1)]
    declared = len(READ_DEVICE_NAME) + ctx.rng.randint(0, 20)
    ctx.raw(0b00, l2cap(ATT, payload, length=declared))
    ctx.expect("l2cap", "incomplete-frame", "none")
    ctx.send(ATT, READ_DEVICE_NAME)                    # a new start: the unfinished PDU is dropped
    await benign_read(ctx, "after an unfinished PDU")


async def l2cap_frame_longer_than_its_length(ctx):
    extra = rnd(ctx, 1, 8)
    ctx.raw(0b00, l2cap(ATT, READ_DEVICE_NAME + extra, length=len(READ_DEVICE_NAME)))
    ctx.expect("l2cap", "frame-length-mismatch", "none")


async def l2cap_continuation_overrun(ctx):
    first = READ_DEVICE_NAME[:3]
    ctx.raw(0b00, l2cap(ATT, first, length=len(READ_DEVICE_NAME)))
    ctx.raw(0b01, READ_DEVICE_NAME[3:] + rnd(ctx, 1, 6))
    ctx.expect("l2cap", "frame-length-mismatch", "none")


async def hci_complete_boundary_flag(ctx):
    ctx.raw(0b11, l2cap(ATT, READ_DEVICE_NAME))        # PB 0b11: BR/EDR only
    ctx.expect("hci", "invalid-packet-boundary", "none")


async def benign_fragmented_request(ctx):
    frame = l2cap(ATT, READ_DEVICE_NAME)
    if ctx.rng.random() < 0.3:
        ctx.raw(0b00, frame)                           # whole, in one fragment
    else:
        offset, pb = 0, 0b00
        while offset < len(frame):
            size = ctx.rng.randint(1, 5)
            ctx.raw(pb, frame[offset:offset + size])
            offset, pb = offset + size, 0b01
    await benign_read(ctx, "fragmented request")


# -- the LE signaling channel (Vol 3 Part A 4) ------------------------------------------------------

UNKNOWN_SIG_CODES = [0x00, 0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x1B,
                     0x1C, 0x20, 0x40, 0x7F, 0x80, 0xC3, 0xFF]


async def sig_unknown_code(ctx):
    ident = ctx.next_id()
    ctx.send(SIG, sig_command(ctx.rng.choice(UNKNOWN_SIG_CODES), ident, rnd(ctx, 0, 10)))
    ctx.expect("signaling", "unknown-code", "command-reject 0x0000")
    await ctx.answer(command_reject(ident, 0x0000), "Command Reject (not understood)")


async def sig_length_disagrees(ctx):
    ident = ctx.next_id()
    code = ctx.rng.choice([0x12, 0x06, 0x14, 0x13, 0x02, 0x7F])
    data = rnd(ctx, 0, 10)
    wrong = len(data) + ctx.rng.choice([-3, -2, -1, 1, 2, 5, 300])
    if wrong < 0:
        wrong = len(data) + 1
    ctx.send(SIG, sig_command(code, ident, data, length=wrong))
    ctx.expect("signaling", "malformed-command", "command-reject 0x0000")
    await ctx.answer(command_reject(ident, 0x0000), "Command Reject (not understood) for a Length that disagrees")


async def sig_cut_short(ctx):
    ident = ctx.next_id()
    size = ctx.rng.choice([1, 2, 3])
    ctx.send(SIG, bytes([ctx.rng.choice([0x12, 0x14, 0x01]), ident, 0x08])[:size])
    if size == 1:
        ctx.expect("signaling", "malformed-command", "none")
    else:
        ctx.expect("signaling", "malformed-command", "command-reject 0x0000")
        await ctx.answer(command_reject(ident, 0x0000), "Command Reject for a command cut short")


async def sig_over_mtu(ctx):
    ident = ctx.next_id()
    data = rnd(ctx, 20, 40)                            # 24–44 octets: over MTU_sig 23
    ctx.send(SIG, sig_command(ctx.rng.choice([0x14, 0x12, 0x55]), ident, data))
    ctx.expect("signaling", "mtu-exceeded", "command-reject 0x0001")
    await ctx.answer(command_reject(ident, 0x0001, le16(23)), "Command Reject (signaling MTU exceeded, MTU 23)")


async def sig_zero_identifier(ctx):
    code = ctx.rng.choice([0x12, 0x14, 0x06, 0x02, 0x13])
    ctx.send(SIG, sig_command(code, 0x00, rnd(ctx, 0, 8)))
    ctx.expect("signaling", "zero-identifier", "none")


def valid_update_parameters(ctx) -> bytes:
    lo = ctx.rng.randint(6, 12)
    hi = ctx.rng.randint(lo, 24)
    return le16(lo) + le16(hi) + le16(0) + le16(ctx.rng.randint(100, 400))


def invalid_update_parameters(ctx) -> bytes:
    which = ctx.rng.choice(["min>max", "min<6", "max>3200", "latency", "timeout<10", "timeout-short"])
    lo, hi, latency, timeout = 6, 12, 0, 200
    if which == "min>max":
        lo, hi = 24, 12
    elif which == "min<6":
        lo = ctx.rng.randint(0, 5)
    elif which == "max>3200":
        hi = 3201 + ctx.rng.randint(0, 1000)
    elif which == "latency":
        latency = 500 + ctx.rng.randint(0, 1000)
    elif which == "timeout<10":
        timeout = ctx.rng.randint(0, 9)
    else:                                              # the timeout must exceed (1 + latency) × interval × 2
        lo, hi, timeout = 800, 800, 100
    return le16(lo) + le16(hi) + le16(latency) + le16(timeout)


async def sig_update_request_to_peripheral(ctx):
    ident = ctx.next_id()
    ctx.send(SIG, sig_command(0x12, ident, valid_update_parameters(ctx)))
    ctx.expect("signaling", "wrong-role", "command-reject 0x0000")
    await ctx.answer(command_reject(ident, 0x0000), "Command Reject (a peripheral does not take the request, 4.20)")


async def sig_update_request_out_of_range(ctx):
    ident = ctx.next_id()
    ctx.send(SIG, sig_command(0x12, ident, invalid_update_parameters(ctx)))
    ctx.expect("signaling", "invalid-parameters", "connection-parameters-rejected")
    await ctx.answer(update_response(ident, 0x0001), "Connection Parameter Update Response, rejected")


async def sig_update_request_valid(ctx):
    ident = ctx.next_id()
    ctx.send(SIG, sig_command(0x12, ident, valid_update_parameters(ctx)))
    await ctx.answer(update_response(ident, 0x0000), "Connection Parameter Update Response, accepted")


async def sig_unsolicited_response(ctx):
    ident = ctx.next_id()
    code, data = ctx.rng.choice([
        (0x13, le16(ctx.rng.randint(0, 1))),                                    # Connection Parameter Update Response
        (0x01, le16(ctx.rng.randint(0, 2)) + rnd(ctx, 0, 4)),                   # Command Reject
        (0x07, le16(0x0040) + le16(0x0041)),                                    # Disconnection Response
        (0x15, le16(0x0040) + le16(23) + le16(23) + le16(1) + le16(0)),         # LE Credit Based Connection Response
        (0x18, le16(23) + le16(23) + le16(1) + le16(0) + le16(0x0040)),         # Credit Based Connection Response
        (0x1A, le16(0)),                                                        # Credit Based Reconfigure Response
    ])
    ctx.send(SIG, sig_command(code, ident, data))
    ctx.expect("signaling", "unsolicited-response", "none")


async def sig_unsupported_command(ctx):
    ident = ctx.next_id()
    code, data = ctx.rng.choice([
        (0x17, le16(0x0080) + le16(64) + le16(64) + le16(5) + le16(0x0040)),    # Credit Based Connection Request
        (0x19, le16(64) + le16(64) + le16(0x0040)),                              # Credit Based Reconfigure Request
    ])
    ctx.send(SIG, sig_command(code, ident, data))
    ctx.expect("signaling", "unsupported-command", "command-reject 0x0000")
    await ctx.answer(command_reject(ident, 0x0000), "Command Reject (not understood) for an enhanced credit based command")


async def sig_credit_based_request_unserved(ctx):
    # LE Credit Based Connection Request (4.22) for an SPSM BLELab does not serve here: a valid
    # question, refused with "SPSM not supported" (4.23), every other field 0, and no report.
    ident = ctx.next_id()
    spsm = ctx.rng.choice([0x0080, 0x0081, 0x00C0, 0x00FF, 0x0025])
    source = ctx.rng.randint(0x0040, 0x007F)
    ctx.send(SIG, sig_command(0x14, ident, le16(spsm) + le16(source) + le16(23) + le16(23) + le16(10)))
    want = sig_command(0x15, ident, le16(0) * 4 + le16(0x0002))
    await ctx.answer(lambda cid, pdu: cid == SIG and pdu == want, "LE Credit Based Connection Response, SPSM not supported")


async def sig_credit_for_unknown_channel(ctx):
    # LE Flow Control Credit (4.24) for a channel that does not exist: an indication, not
    # answered; reported.
    ident = ctx.next_id()
    ctx.send(SIG, sig_command(0x16, ident, le16(ctx.rng.randint(0x0040, 0x007F)) + le16(ctx.rng.randint(1, 0xFFFF))))
    ctx.expect("signaling", "unknown-channel", "none")


async def sig_disconnection_request(ctx):
    ident = ctx.next_id()
    dcid, scid = ctx.rng.randint(0x0040, 0x007F), ctx.rng.randint(0x0040, 0x007F)
    ctx.send(SIG, sig_command(0x06, ident, le16(dcid) + le16(scid)))
    ctx.expect("signaling", "unknown-channel", "command-reject 0x0002")
    await ctx.answer(command_reject(ident, 0x0002, le16(dcid) + le16(scid)), "Command Reject (invalid CID) naming both CIDs")


# -- SMP (Vol 3 Part H 3) ---------------------------------------------------------------------------

SMP_LENGTHS = {0x01: 7, 0x02: 7, 0x03: 17, 0x04: 17, 0x05: 2, 0x06: 17, 0x07: 11, 0x08: 17, 0x09: 8, 0x0A: 17,
               0x0B: 2, 0x0C: 65, 0x0D: 17, 0x0E: 2}


def pairing_request(io=0x03, oob=0x00, auth=0x01, key_size=16, ikd=0x07, rkd=0x07) -> bytes:
    return bytes([0x01, io, oob, auth, key_size, ikd, rkd])


async def smp_pairing_request_out_of_range(ctx):
    field = ctx.rng.choice(["io", "oob", "key-small", "key-large"])
    pdu = pairing_request(io=ctx.rng.randint(5, 255) if field == "io" else 0x03,
                          oob=ctx.rng.randint(2, 255) if field == "oob" else 0x00,
                          key_size={"key-small": ctx.rng.randint(0, 6), "key-large": ctx.rng.randint(17, 255)}.get(field, 16))
    ctx.send(SMP, pdu)
    ctx.expect("smp", "invalid-parameters", "pairing-failed 0x0a")
    await ctx.answer(pairing_failed(0x0A), "Pairing Failed (invalid parameters)")


async def smp_pairing_request_refused(ctx):
    ctx.send(SMP, pairing_request(io=ctx.rng.randint(0, 4), key_size=ctx.rng.randint(7, 16)))
    await ctx.answer(pairing_failed(0x05), "Pairing Failed (pairing not supported)")


async def smp_security_request_refused(ctx):
    ctx.send(SMP, bytes([0x0B, ctx.rng.randrange(256)]))
    await ctx.answer(pairing_failed(0x05), "Pairing Failed (pairing not supported)")


async def smp_wrong_role(ctx):
    if ctx.blelab_role == "peripheral":
        ctx.send(SMP, bytes([0x0B, 0x01]))            # Security Request: only a peripheral sends it
    else:
        ctx.send(SMP, pairing_request())              # Pairing Request: only a central sends it
    ctx.expect("smp", "wrong-role", "pairing-failed 0x07")
    await ctx.answer(pairing_failed(0x07), "Pairing Failed (command not supported)")


async def smp_wrong_length(ctx):
    code = ctx.rng.choice([c for c in SMP_LENGTHS if c != 0x05])
    size = SMP_LENGTHS[code]
    wrong = ctx.rng.choice([n for n in (1, size - 1, size + 1, size + 7) if n != size and n >= 1])
    ctx.send(SMP, bytes([code]) + rnd(ctx, wrong - 1, wrong - 1))
    ctx.expect("smp", "invalid-length", "pairing-failed 0x0a")
    await ctx.answer(pairing_failed(0x0A), "Pairing Failed (invalid parameters) for a command of the wrong length")


async def smp_out_of_sequence(ctx):
    code = ctx.rng.choice([0x02, 0x03, 0x04, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x0E])
    ctx.send(SMP, bytes([code]) + rnd(ctx, SMP_LENGTHS[code] - 1, SMP_LENGTHS[code] - 1))
    ctx.expect("smp", "unexpected-command", "pairing-failed 0x07")
    await ctx.answer(pairing_failed(0x07), "Pairing Failed (command not supported) with no pairing in progress")


async def smp_reserved_code(ctx):
    ctx.send(SMP, bytes([ctx.rng.choice([0x00] + list(range(0x0F, 0x100)))]) + rnd(ctx, 0, 10))
    ctx.expect("smp", "unknown-code", "none")


async def smp_pairing_failed(ctx):
    ctx.send(SMP, bytes([0x05, ctx.rng.randint(1, 0x0F)]))
    ctx.expect("smp", "unexpected-command", "none")


async def smp_empty(ctx):
    ctx.send(SMP, b"")
    ctx.expect("smp", "invalid-length", "none")


# -- ATT (Vol 3 Part F 3) and GATT -------------------------------------------------------------------

MALFORMED_REQUESTS = [
    bytes.fromhex("0a 01"),                    # Read Request, handle cut short
    bytes.fromhex("0a 0100 00"),               # … one octet too many
    bytes.fromhex("12 01"),                    # Write Request, handle cut short
    bytes.fromhex("08 0100 ffff 0028 00"),     # Read By Type Request, a 3-octet UUID
    bytes.fromhex("10 0100"),                  # Read By Group Type Request, no end handle
    bytes.fromhex("04 0100 ff"),               # Find Information Request, end handle cut short
    bytes.fromhex("18"),                       # Execute Write Request without Flags
    bytes.fromhex("0c 0100"),                  # Read Blob Request without the offset
    bytes.fromhex("02 17"),                    # Exchange MTU Request, half a Client Rx MTU
    bytes.fromhex("0e 0100"),                  # Read Multiple Request with one handle (two at least)
    bytes.fromhex("16 0100 00"),               # Prepare Write Request, half an offset
]


def handle_in_error(pdu: bytes) -> int:
    """The handle an Error Response to a malformed request names (Part F 3.4.1.1): the first one
    the request carries, 0x0000 when its octets do not reach that far or it has none."""
    if len(pdu) >= 3 and pdu[0] in (0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16):
        return pdu[1] | pdu[2] << 8
    return 0x0000


async def att_malformed_request(ctx):
    pdu = ctx.rng.choice(MALFORMED_REQUESTS)
    ctx.send(ATT, pdu)
    ctx.expect("att", "malformed-pdu", "error-response 0x%02x 0x04" % pdu[0])
    await ctx.answer(error_response(pdu[0], 0x04, handle_in_error(pdu)), "Error Response (invalid PDU) to opcode 0x%02x" % pdu[0])


async def att_empty(ctx):
    ctx.send(ATT, b"")
    ctx.expect("att", "empty-pdu", "none")


# Well-formed responses with no request of BLELab's outstanding (Part F 3.3.2): dropped.
UNSOLICITED_RESPONSES = [
    bytes.fromhex("0b 6869"),                  # Read Response
    bytes.fromhex("0b"),                       # … of an empty value
    bytes.fromhex("13"),                       # Write Response
    bytes.fromhex("03 1700"),                  # Exchange MTU Response
    bytes.fromhex("01 0a 0300 0a"),            # Error Response
    bytes.fromhex("05 01 0300 0028"),          # Find Information Response
    bytes.fromhex("07 0100 0500"),             # Find By Type Value Response
    bytes.fromhex("09 04 0300 6869"),          # Read By Type Response
    bytes.fromhex("0d 6869"),                  # Read Blob Response
    bytes.fromhex("0f 6869"),                  # Read Multiple Response
    bytes.fromhex("11 06 0100 0500 0018"),     # Read By Group Type Response
    bytes.fromhex("17 0300 0000 41"),          # Prepare Write Response
    bytes.fromhex("19"),                       # Execute Write Response
    bytes.fromhex("21 0200 6869"),             # Read Multiple Variable Response
]

# Responses with no request outstanding that do not decode either: reported as malformed (the
# decoder speaks first), dropped.
MALFORMED_RESPONSES = [
    bytes.fromhex("03"),                       # Exchange MTU Response without the MTU
    bytes.fromhex("01 0a 0300"),               # Error Response without its code
    bytes.fromhex("09"),                       # Read By Type Response without Length
    bytes.fromhex("05 01 03"),                 # Find Information Response, half a handle
    bytes.fromhex("11 06 0100"),               # Read By Group Type Response, an entry cut short
]


async def att_unsolicited_response(ctx):
    ctx.send(ATT, ctx.rng.choice(UNSOLICITED_RESPONSES))
    ctx.expect("att", "unsolicited-response", "none")


async def att_malformed_unsolicited_response(ctx):
    ctx.send(ATT, ctx.rng.choice(MALFORMED_RESPONSES))
    ctx.expect("att", "malformed-pdu", "none")


async def att_unsolicited_confirmation(ctx):
    # BLELab never indicated anything. A confirmation has no parameters: with trailing octets it
    # does not decode, and the decoder speaks first.
    extra = rnd(ctx, 0, 2) if ctx.rng.random() < 0.25 else b""
    ctx.send(ATT, bytes.fromhex("1e") + extra)
    ctx.expect("att", "malformed-pdu" if extra else "unsolicited-confirmation", "none")


async def att_multiple_notification(ctx):
    # BLELab's client never set Multiple Handle Value Notifications Supported (Part G 7.2).
    ctx.send(ATT, bytes([0x23]) + le16(ctx.unknown_handle()) + le16(1) + b"x")
    ctx.expect("att", "unsupported-pdu", "none")


async def att_malformed_notification(ctx):
    ctx.send(ATT, bytes([ctx.rng.choice([0x1B, 0x1D])]) + rnd(ctx, 0, 1))
    ctx.expect("att", "malformed-pdu", "none")


async def gatt_notification_for_unknown_handle(ctx):
    indicate = ctx.rng.random() < 0.4
    ctx.send(ATT, bytes([0x1D if indicate else 0x1B]) + le16(ctx.unknown_handle()) + rnd(ctx, 0, 8))
    ctx.expect("gatt", "notification-for-unknown-handle", "none")
    if indicate:
        await ctx.answer(att_opcode(0x1E), "Handle Value Confirmation (an indication is confirmed even when ignored)")


# Opcodes Core 5.4 does not define (Part F 3.4.8, Table 3.37): with the Command Flag (bit 6) clear
# a request, answered Request Not Supported naming handle 0x0000; with it set a command, ignored.
UNKNOWN_REQUEST_OPCODES = [0x00, 0x14, 0x15, 0x1A, 0x1C, 0x1F, 0x22, 0x24, 0x2F, 0x3E, 0x3F, 0x80, 0x8A, 0x92, 0xBF]
UNKNOWN_COMMAND_OPCODES = [0x40, 0x41, 0x53, 0x5B, 0x7F, 0xC0, 0xD3, 0xFF]


async def att_unknown_request(ctx):
    opcode = ctx.rng.choice(UNKNOWN_REQUEST_OPCODES)
    ctx.send(ATT, bytes([opcode]) + rnd(ctx, 0, 4))
    ctx.expect("att", "unknown-opcode", "error-response 0x%02x 0x06" % opcode)
    await ctx.answer(error_response(opcode, 0x06, 0x0000), "Error Response (request not supported) to opcode 0x%02x" % opcode)


async def att_unknown_command(ctx):
    ctx.send(ATT, bytes([ctx.rng.choice(UNKNOWN_COMMAND_OPCODES)]) + rnd(ctx, 0, 6))
    ctx.expect("att", "unknown-opcode", "none")


async def att_read_multiple_variable(ctx):
    """Defined by Core 5.2 and later, not implemented by BLELab: Request Not Supported, no violation."""
    ctx.send(ATT, bytes([0x20]) + le16(0x0003) + le16(0x0005))
    await ctx.answer(error_response(0x20, 0x06, 0x0000), "Error Response (request not supported) to Read Multiple Variable")


async def att_signed_write(ctx):
    """A Signed Write Command: BLELab never paired, so there is no CSRK to check its signature
    with; ignored (Part F 3.4.5.4). Without room for the 12-octet signature it does not decode."""
    handle = ctx.rng.randint(0x0001, 0x0030)
    if ctx.rng.random() < 0.75:
        ctx.send(ATT, bytes([0xD2]) + le16(handle) + rnd(ctx, 0, 6) + rnd(ctx, 12, 12))
        ctx.expect("att", "unverified-signed-write", "none")
    else:
        ctx.send(ATT, bytes([0xD2]) + le16(handle) + rnd(ctx, 0, 11)[:ctx.rng.randint(0, 11)])
        ctx.expect("att", "malformed-pdu", "none")


# Handle 0x0000 is reserved (Part F 3.2.2): a request naming it is answered Invalid Handle naming
# 0x0000; a Write Command to it is ignored.
HANDLE_ZERO = [
    (bytes.fromhex("0a 0000"), True),                      # Read Request
    (bytes.fromhex("0c 0000 0400"), True),                 # Read Blob Request
    (bytes.fromhex("0e 0300 0000"), True),                 # Read Multiple Request, 0x0000 second
    (bytes.fromhex("12 0000 41"), True),                   # Write Request
    (bytes.fromhex("16 0000 0000 41"), True),              # Prepare Write Request
    (bytes.fromhex("04 0000 ffff"), True),                 # Find Information from 0x0000
    (bytes.fromhex("08 0000 ffff 002a"), True),            # Read By Type from 0x0000
    (bytes.fromhex("10 0000 ffff 0028"), True),            # Read By Group Type from 0x0000
    (bytes.fromhex("06 0000 ffff 0028 0018"), True),       # Find By Type Value from 0x0000
    (bytes.fromhex("52 0000 41"), False),                  # Write Command
]


async def att_handle_zero(ctx):
    pdu, request = ctx.rng.choice(HANDLE_ZERO)
    ctx.send(ATT, pdu)
    if request:
        ctx.expect("att", "invalid-handle", "error-response 0x%02x 0x01" % pdu[0])
        await ctx.answer(error_response(pdu[0], 0x01, 0x0000), "Error Response (invalid handle) to opcode 0x%02x naming 0x0000" % pdu[0])
    else:
        ctx.expect("att", "invalid-handle", "none")


async def att_reversed_range(ctx):
    """A range whose Starting Handle is after its Ending Handle (Part F 3.4.3.1, 3.4.3.3, 3.4.4.1,
    3.4.4.9): Invalid Handle naming the Starting Handle."""
    end = ctx.rng.randint(0x0001, 0xFFFE)
    start = ctx.rng.randint(end + 1, 0xFFFF)
    opcode, tail = ctx.rng.choice([(0x04, b""), (0x06, bytes.fromhex("0028 0018")), (0x08, bytes.fromhex("002a")),
                                   (0x10, bytes.fromhex("0028"))])
    ctx.send(ATT, bytes([opcode]) + le16(start) + le16(end) + tail)
    ctx.expect("att", "invalid-handle", "error-response 0x%02x 0x01" % opcode)
    await ctx.answer(error_response(opcode, 0x01, start), "Error Response (invalid handle) naming the Starting Handle 0x%04x" % start)


def read_long(ctx):
    """Read By Type of `blelab hostile`'s 300-octet characteristic: its value comes back cut to
    ATT_MTU - 4 octets (Part F 3.4.4.2), which shows the ATT_MTU in use."""
    return bytes([0x08]) + le16(0x0001) + le16(0xFFFF) + uuid128(LONG_UUID)


async def check_att_mtu(ctx, why: str):
    ctx.send(ATT, read_long(ctx))
    got = await ctx.answer(att_opcode(0x09), "Read By Type Response of the long characteristic (%s)" % why)
    if got is not None:
        want = min(ctx.att_mtu - 4, 253, 300)
        if len(got) < 2 or got[1] != want + 2:
            ctx.fail("%s: the long value came back with %d octets, not the %d of ATT_MTU %d"
                     % (why, (got[1] - 2) if len(got) > 1 else -1, want, ctx.att_mtu))


async def att_mtu_exchange(ctx):
    """Exchange MTU Requests to BLELab's server (Part F 3.4.2). The first of the connection sets
    ATT_MTU = min(Client Rx MTU, BLELab's Server Rx MTU), unless that would lower the ATT_MTU
    BLELab's own client agreed on (shrinking-mtu); every later one breaks 3.4.2.1 (once per
    connection: repeated-mtu-exchange). Each is answered with BLELab's Server Rx MTU and ATT_MTU
    never changes after the first; the long characteristic's read shows it."""
    if ctx.mtu_requests == 0:
        rx = ctx.rng.randint(23, 517)
        negotiated = max(23, min(rx, ctx.server_rx_mtu))
        ctx.send(ATT, bytes([0x02]) + le16(rx))
        ctx.mtu_requests += 1
        if negotiated < ctx.att_mtu:
            ctx.expect("att", "shrinking-mtu", "none")
        else:
            ctx.att_mtu = negotiated
        # No answer (or none awaited: the round ends early): another request now would be pipelined.
        if await ctx.answer(exchange_mtu_response(ctx.server_rx_mtu), "Exchange MTU Response (Server Rx MTU %d)" % ctx.server_rx_mtu) is None:
            return
    rx = ctx.rng.choice([ctx.rng.randint(23, 517), ctx.rng.randint(0, 22), ctx.rng.randint(518, 0xFFFF)])
    ctx.send(ATT, bytes([0x02]) + le16(rx))
    ctx.mtu_requests += 1
    ctx.expect("att", "repeated-mtu-exchange", "none")
    if await ctx.answer(exchange_mtu_response(ctx.server_rx_mtu), "Exchange MTU Response to a repeated request") is None:
        return
    await check_att_mtu(ctx, "ATT_MTU after a repeated Exchange MTU offering %d" % rx)


async def att_pipelined_requests(ctx):
    """A request sent before BLELab answered the previous one (Part F 3.3.2: one at a time). The
    first reads `blelab hostile`'s slow characteristic, whose application answers a second later,
    so the second request certainly arrives while the first is pending whatever the transport's
    timing. BLELab, like BlueZ, answers neither and ends the link: Remote User Terminated
    Connection (0x13). The round ends there; the next one runs on a new connection."""
    ctx.send(ATT, bytes([0x08]) + le16(0x0001) + le16(0xFFFF) + uuid128(SLOW_UUID))
    ctx.send(ATT, ctx.rng.choice([
        READ_DEVICE_NAME,                                  # Read By Type
        bytes.fromhex("0a 0100"),                          # Read Request
        bytes.fromhex("10 0100 ffff 0028"),                # Read By Group Type
        bytes.fromhex("04 0100 ffff"),                     # Find Information
        bytes([0x02]) + le16(ctx.rng.randint(23, 517)),    # Exchange MTU
        bytes.fromhex("12 0300 41"),                       # Write Request
    ]))
    ctx.expect("att", "pipelined-request", "disconnect 0x13")
    await ctx.dropped(0x13, "the link dropped (Remote User Terminated Connection) for a pipelined request")


def exchange_mtu_response(server_rx: int):
    want = bytes([0x03]) + le16(server_rx)
    return lambda cid, pdu: cid == ATT and pdu == want


def uuid128(text: str) -> bytes:
    return bytes.fromhex(text.replace("-", ""))[::-1]


# `blelab hostile`'s service (HostileTarget.swift): a characteristic whose reads its application
# answers a second later, and one of 300 octets.
SLOW_UUID = "B1E1B0A5-0000-4000-8000-00805F9B34FB"
LONG_UUID = "B1E1B0A6-0000-4000-8000-00805F9B34FB"


@dataclass(frozen=True)
class Action:
    name: str
    run: Callable[..., Awaitable[None]]
    roles: tuple = BOTH
    weight: int = 1
    benign: bool = False


ACTIONS = [
    Action("l2cap-unknown-cid", l2cap_unknown_cid, weight=2),
    Action("l2cap-continuation-without-start", l2cap_continuation_without_start, weight=2),
    Action("l2cap-incomplete-then-new-start", l2cap_incomplete_then_new_start, weight=2),
    Action("l2cap-frame-longer-than-its-length", l2cap_frame_longer_than_its_length),
    Action("l2cap-continuation-overrun", l2cap_continuation_overrun),
    Action("hci-complete-boundary-flag", hci_complete_boundary_flag),
    Action("benign-fragmented-request", benign_fragmented_request, benign=True),
    Action("sig-unknown-code", sig_unknown_code, weight=2),
    Action("sig-length-disagrees", sig_length_disagrees),
    Action("sig-cut-short", sig_cut_short),
    Action("sig-over-mtu", sig_over_mtu),
    Action("sig-zero-identifier", sig_zero_identifier),
    Action("sig-update-request-to-peripheral", sig_update_request_to_peripheral, roles=("peripheral",)),
    Action("sig-update-request-out-of-range", sig_update_request_out_of_range, roles=("central",), weight=2),
    Action("benign-update-request", sig_update_request_valid, roles=("central",), benign=True),
    Action("sig-unsolicited-response", sig_unsolicited_response, weight=2),
    Action("sig-unsupported-command", sig_unsupported_command),
    Action("benign-credit-based-request", sig_credit_based_request_unserved, benign=True),
    Action("sig-credit-for-unknown-channel", sig_credit_for_unknown_channel),
    Action("sig-disconnection-request", sig_disconnection_request),
    Action("smp-pairing-request-out-of-range", smp_pairing_request_out_of_range, roles=("peripheral",), weight=2),
    Action("benign-pairing-request", smp_pairing_request_refused, roles=("peripheral",), benign=True),
    Action("benign-security-request", smp_security_request_refused, roles=("central",), benign=True),
    Action("smp-wrong-role", smp_wrong_role),
    Action("smp-wrong-length", smp_wrong_length, weight=2),
    Action("smp-out-of-sequence", smp_out_of_sequence, weight=2),
    Action("smp-reserved-code", smp_reserved_code),
    Action("smp-pairing-failed", smp_pairing_failed),
    Action("smp-empty", smp_empty),
    Action("att-malformed-request", att_malformed_request, weight=2),
    Action("att-empty", att_empty),
    Action("att-unsolicited-response", att_unsolicited_response, weight=2),
    Action("att-malformed-unsolicited-response", att_malformed_unsolicited_response),
    Action("att-unsolicited-confirmation", att_unsolicited_confirmation),
    Action("att-multiple-notification", att_multiple_notification),
    Action("att-malformed-notification", att_malformed_notification),
    Action("gatt-notification-for-unknown-handle", gatt_notification_for_unknown_handle, weight=2),
    Action("att-unknown-request", att_unknown_request),
    Action("att-unknown-command", att_unknown_command),
    Action("benign-read-multiple-variable", att_read_multiple_variable, benign=True),
    Action("att-signed-write", att_signed_write),
    Action("att-handle-zero", att_handle_zero),
    Action("att-reversed-range", att_reversed_range),
    Action("att-mtu-exchange", att_mtu_exchange),
    Action("att-pipelined-requests", att_pipelined_requests),
]


def actions_for(role: str) -> list:
    return [a for a in ACTIONS if role in a.roles]


# -- answers a GATT server should have sent, made wrong (BLELab as central, Vol 3 Part F 3.3.2) -----

MALFORMED_RESPONSE = {
    0x01: lambda pdu: pdu[:3],                 # Error Response cut short
    0x03: lambda pdu: pdu[:1],                 # Exchange MTU Response without the MTU
    0x05: lambda pdu: pdu[:1],                 # Find Information Response without Format
    0x07: lambda pdu: pdu[:2],                 # Find By Type Value Response, one octet of a handle pair
    0x09: lambda pdu: pdu[:1],                 # Read By Type Response without Length
    0x11: lambda pdu: pdu[:1],                 # Read By Group Type Response without Length
    0x13: lambda pdu: pdu + b"\x00",           # Write Response with a stray octet
    0x17: lambda pdu: pdu[:1],                 # Prepare Write Response without its handle
    0x19: lambda pdu: pdu + b"\x00",           # Execute Write Response with a stray octet
}


def tampered_response(rng, pdu: bytes):
    """A wrong version of the response `pdu`: (octets, kind BLELab must report)."""
    if pdu[0] in MALFORMED_RESPONSE and rng.random() < 0.6:
        return MALFORMED_RESPONSE[pdu[0]](pdu), "malformed-pdu"
    # Another response than the request's (an Error Response is an answer to anything).
    other = bytes.fromhex("0b 6869") if pdu[0] == 0x13 else bytes.fromhex("13")
    return other, "unexpected-response"
