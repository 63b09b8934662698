"""The hostile peer's repertoire (tools/hostile_peer.py): what it sends to BLELab's host and what
BLELab must report and answer for each, by the Core Specification 5.4.

Each action is an async function of a round context (`ctx`, tools/hostile_peer.py's `Round`):
it sends octets (`ctx.send` a whole L2CAP basic frame on a CID, `ctx.raw` one ACL fragment with
its packet boundary flag as given), declares what BLELab's host must report for it
(`ctx.expect(layer, kind, answer)`, in the order BLELab will see it) and waits for the answer on
the link (`ctx.answer(matcher, what)`). Benign actions (normal traffic mixed in) declare nothing
and check their normal answer.

`answer` is BLELab's own token for what it sent back (ProtocolViolation.Answer.token):
"none", "command-reject 0x0000", "connection-parameters-rejected", "pairing-failed 0x07",
"error-response 0x0a 0x04".

ACTIONS lists them with the BLELab roles each applies to and a weight. `pending` marks actions
whose typed report belongs to the ATT branch (pipelined requests, repeated Exchange MTU, unknown
opcodes, handle 0, reversed ranges): they are sent only with --with-pending until BLELab reports
those kinds.
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


def error_response(request_opcode: int, code: int):
    return lambda cid, pdu: cid == ATT and len(pdu) == 5 and pdu[0] == 0x01 and pdu[1] == request_opcode and pdu[4] == code


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
        (0x14, le16(0x0080) + le16(0x0040) + le16(23) + le16(23) + le16(10)),   # LE Credit Based Connection Request
        (0x16, le16(0x0040) + le16(5)),                                          # Flow Control Credit Indication
        (0x17, le16(0x0080) + le16(64) + le16(64) + le16(5) + le16(0x0040)),    # Credit Based Connection Request
        (0x19, le16(64) + le16(64) + le16(0x0040)),                              # Credit Based Reconfigure Request
    ])
    ctx.send(SIG, sig_command(code, ident, data))
    ctx.expect("signaling", "unsupported-command", "command-reject 0x0000")
    await ctx.answer(command_reject(ident, 0x0000), "Command Reject (not understood) for a credit based command")


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
]


async def att_malformed_request(ctx):
    pdu = ctx.rng.choice(MALFORMED_REQUESTS)
    ctx.send(ATT, pdu)
    ctx.expect("att", "malformed-pdu", "error-response 0x%02x 0x04" % pdu[0])
    await ctx.answer(error_response(pdu[0], 0x04), "Error Response (invalid PDU) to opcode 0x%02x" % pdu[0])


async def att_empty(ctx):
    ctx.send(ATT, b"")
    ctx.expect("att", "empty-pdu", "none")


async def att_unsolicited_response(ctx):
    ctx.send(ATT, ctx.rng.choice([
        bytes.fromhex("0b 6869"),              # Read Response
        bytes.fromhex("13"),                   # Write Response
        bytes.fromhex("03 1700"),              # Exchange MTU Response
        bytes.fromhex("01 0a 0300 0a"),        # Error Response
        bytes.fromhex("09 04 0300 6869"),      # Read By Type Response
        bytes.fromhex("19"),                   # Execute Write Response
    ]))
    ctx.expect("att", "unsolicited-response", "none")


async def att_unsolicited_confirmation(ctx):
    ctx.send(ATT, bytes.fromhex("1e"))
    ctx.expect("att", "unsolicited-confirmation", "none")


async def att_multiple_notification(ctx):
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


# Typed reports that belong to the ATT branch (sent with --with-pending only). The answers on the
# link are checked already; the kinds are the ones proposed for ATT's event.
async def att_pipelined_requests(ctx):
    ctx.send(ATT, READ_DEVICE_NAME)
    ctx.send(ATT, READ_DEVICE_NAME)
    ctx.expect("att", "pipelined-request", "none")


async def att_repeated_mtu_exchange(ctx):
    ctx.send(ATT, bytes([0x02]) + le16(ctx.rng.randint(23, 517)))
    await ctx.answer(att_opcode(0x03), "Exchange MTU Response")
    ctx.send(ATT, bytes([0x02]) + le16(ctx.rng.randint(23, 517)))
    ctx.expect("att", "repeated-mtu-exchange", "none")


async def att_unknown_request(ctx):
    opcode = ctx.rng.choice([0x1F, 0x2F, 0x3E])
    ctx.send(ATT, bytes([opcode]) + rnd(ctx, 0, 4))
    ctx.expect("att", "unknown-opcode", "error-response 0x%02x 0x06" % opcode)
    await ctx.answer(error_response(opcode, 0x06), "Error Response (request not supported)")


async def att_handle_zero(ctx):
    ctx.send(ATT, bytes.fromhex("0a 0000"))
    ctx.expect("att", "invalid-handle", "error-response 0x0a 0x01")
    await ctx.answer(error_response(0x0A, 0x01), "Error Response (invalid handle) to a read of handle 0")


async def att_reversed_range(ctx):
    ctx.send(ATT, bytes.fromhex("10 0500 0100 0028"))
    ctx.expect("att", "invalid-handle", "error-response 0x10 0x01")
    await ctx.answer(error_response(0x10, 0x01), "Error Response (invalid handle) to a reversed range")


@dataclass(frozen=True)
class Action:
    name: str
    run: Callable[..., Awaitable[None]]
    roles: tuple = BOTH
    weight: int = 1
    pending: bool = False
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
    Action("att-unsolicited-confirmation", att_unsolicited_confirmation),
    Action("att-multiple-notification", att_multiple_notification),
    Action("att-malformed-notification", att_malformed_notification),
    Action("gatt-notification-for-unknown-handle", gatt_notification_for_unknown_handle, weight=2),
    Action("att-pipelined-requests", att_pipelined_requests, pending=True),
    Action("att-repeated-mtu-exchange", att_repeated_mtu_exchange, pending=True),
    Action("att-unknown-request", att_unknown_request, pending=True),
    Action("att-handle-zero", att_handle_zero, pending=True),
    Action("att-reversed-range", att_reversed_range, pending=True),
]


def actions_for(role: str, with_pending: bool) -> list:
    return [a for a in ACTIONS if role in a.roles and (with_pending or not a.pending)]


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
