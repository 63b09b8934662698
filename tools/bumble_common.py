"""Shared by bumble_peripheral.py and bumble_central.py: the interop GATT layout, endpoint
spelling, JSON-lines output and value parsing. Run those scripts with the venv's Python."""

from __future__ import annotations

import json
import sys
import time

# The interop service (docs/tiers.md). 128-bit UUIDs of our own, one per role.
SERVICE_UUID = "B1E1AB00-0000-4C0A-B1E1-AB0000000000"
WRITE_UUID = "B1E1AB01-0000-4C0A-B1E1-AB0000000000"      # properties: write (Write Request only)
WWR_UUID = "B1E1AB02-0000-4C0A-B1E1-AB0000000000"        # properties: write-without-response only
NOTIFY_UUID = "B1E1AB03-0000-4C0A-B1E1-AB0000000000"     # properties: notify (+ CCCD)

ATT_OPCODES = {
    0x01: "error-response", 0x02: "exchange-mtu-request", 0x03: "exchange-mtu-response",
    0x04: "find-information-request", 0x05: "find-information-response",
    0x06: "find-by-type-value-request", 0x07: "find-by-type-value-response",
    0x08: "read-by-type-request", 0x09: "read-by-type-response", 0x0A: "read-request",
    0x0B: "read-response", 0x0C: "read-blob-request", 0x0D: "read-blob-response",
    0x10: "read-by-group-type-request", 0x11: "read-by-group-type-response",
    0x12: "write-request", 0x13: "write-response", 0x16: "prepare-write-request",
    0x18: "execute-write-request", 0x1B: "handle-value-notification",
    0x1D: "handle-value-indication", 0x1E: "handle-value-confirmation", 0x52: "write-command",
    0xD2: "signed-write-command",
}

_T0 = time.monotonic()


def emit(event: str, **fields) -> None:
    """One JSON object per line on stdout: {"t": seconds since start, "event": ..., ...}."""
    record = {"t": round(time.monotonic() - _T0, 4), "event": event}
    record.update(fields)
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def bumble_transport_spec(endpoint: str) -> str:
    """BLELab's endpoint spelling to Bumble's transport names (client side).
    tcp:HOST:PORT / HOST:PORT -> tcp-client:HOST:PORT; unix:PATH -> unix:PATH (a client in Bumble);
    anything with another Bumble scheme passes through."""
    if endpoint.startswith("tcp:"):
        return "tcp-client:" + endpoint[4:]
    if endpoint.startswith(("unix:", "tcp-client:", "unix-client:", "serial:", "pty:", "usb:", "hci-socket:",
                            "vhci", "android-", "ws-client:", "udp:", "file:")):
        return endpoint
    host, sep, port = endpoint.rpartition(":")
    if sep and port.isdigit():
        return "tcp-client:%s:%s" % (host or "127.0.0.1", port)
    raise ValueError("endpoint %r: use tcp:HOST:PORT, HOST:PORT or unix:PATH" % endpoint)


def parse_value(text: str) -> bytes:
    """text:hello -> UTF-8 bytes; hex:0102 or 0x0102 -> bytes; anything else is UTF-8 text."""
    if text.startswith("text:"):
        return text[5:].encode()
    if text.startswith("hex:"):
        return bytes.fromhex(text[4:])
    if text.startswith("0x"):
        return bytes.fromhex(text[2:])
    return text.encode()


def value_fields(value: bytes) -> dict:
    out = {"value_hex": value.hex()}
    try:
        text = value.decode("utf-8")
        if text.isprintable():
            out["value_text"] = text
    except UnicodeDecodeError:
        pass
    return out


def address_fields(address) -> dict:
    """A bumble hci.Address as {"address": "AA:BB:..", "address_type": "public"|"random"}."""
    text = address.to_string(with_type_qualifier=False) if hasattr(address, "to_string") else str(address)
    kind = "public" if getattr(address, "is_public", False) else "random"
    return {"address": text.upper(), "address_type": kind}


def properties_list(props: int) -> list:
    names = [(0x02, "read"), (0x04, "write-without-response"), (0x08, "write"), (0x10, "notify"),
             (0x20, "indicate"), (0x01, "broadcast"), (0x40, "authenticated-signed-writes"),
             (0x80, "extended-properties")]
    return [name for bit, name in names if props & bit]


def uuid_text(uuid) -> str:
    """A bumble UUID as BLELab spells UUIDs: 2A00 for 16-bit ones, the canonical form for 128-bit."""
    try:
        raw = uuid.to_bytes(force_128=False)
    except Exception:  # noqa: BLE001
        return str(uuid)
    if len(raw) in (2, 4):
        return "%0*X" % (len(raw) * 2, int.from_bytes(raw, "little"))
    text = str(uuid)
    return text.split(" ")[0].replace("UUID-128:", "").upper()


async def open_h4(endpoint: str):
    """Opens a Bumble transport to ENDPOINT. For TCP it opens the socket itself, with
    TCP_NODELAY and TCP_QUICKACK re-armed on every read: RootCanal writes each H4 packet as two
    send() calls with Nagle on, so without an immediate ACK from us every event waits for the
    delayed-ACK timer (~40 ms; Bumble's Host power-on takes ~3 s instead of ~0.1 s)."""
    import asyncio
    import socket
    from bumble.transport import open_transport
    from bumble.transport.common import StreamPacketSink, StreamPacketSource, Transport

    spec = bumble_transport_spec(endpoint)
    if not spec.startswith("tcp-client:"):
        return await open_transport(spec)
    host, _, port = spec[len("tcp-client:"):].rpartition(":")
    quickack = getattr(socket, "TCP_QUICKACK", 12 if sys.platform.startswith("linux") else None)

    class QuickAckSource(StreamPacketSource):
        def connection_made(self, transport):
            self._sock = transport.get_extra_info("socket")

        def data_received(self, data):
            if quickack is not None and self._sock is not None:
                try:
                    self._sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
                except OSError:
                    pass
            super().data_received(data)

        def connection_lost(self, exc):
            self.on_transport_lost()

    loop = asyncio.get_running_loop()
    sock = socket.create_connection((host or "127.0.0.1", int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    transport, source = await loop.create_connection(QuickAckSource, sock=sock)
    source._sock = sock
    return Transport(source, StreamPacketSink(transport))


# Pairing (SMP) options shared by both scripts: --pairing IO turns Bumble's Security Manager on
# with that IO capability; --legacy (no Secure Connections), --mitm, --no-bonding, --passkey N
# (what Bumble shows when it displays, or types when it inputs), --reject (the user says no).
IO_NAMES = ("no-input-no-output", "display-only", "display-yes-no", "keyboard-only", "keyboard-display")


def add_pairing_arguments(ap) -> None:
    ap.add_argument("--pairing", choices=IO_NAMES, default=None, metavar="IO",
                    help="pair with this IO capability: " + ", ".join(IO_NAMES))
    ap.add_argument("--legacy", action="store_true", help="LE legacy pairing only (no Secure Connections)")
    ap.add_argument("--mitm", action="store_true", help="ask for MITM protection")
    ap.add_argument("--no-bonding", action="store_true", help="do not bond")
    ap.add_argument("--passkey", type=int, default=None, help="the passkey shown or typed (default: random / none)")
    ap.add_argument("--reject", action="store_true", help="refuse numeric comparison and confirmations")


def pairing_config_factory(args):
    """A Bumble pairing_config_factory for the --pairing options (None without --pairing)."""
    if args.pairing is None:
        return None
    from bumble.pairing import PairingConfig, PairingDelegate

    io = {
        "no-input-no-output": PairingDelegate.NO_OUTPUT_NO_INPUT,
        "display-only": PairingDelegate.DISPLAY_OUTPUT_ONLY,
        "display-yes-no": PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
        "keyboard-only": PairingDelegate.KEYBOARD_INPUT_ONLY,
        "keyboard-display": PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
    }[args.pairing]

    class Delegate(PairingDelegate):
        async def accept(self):
            return not args.reject

        async def confirm(self, auto=False):
            return not args.reject

        async def compare_numbers(self, number, digits):
            emit("compare", number=number)
            return not args.reject

        async def get_number(self):
            emit("passkey-requested", passkey=args.passkey)
            return args.passkey

        async def display_number(self, number, digits):
            emit("passkey-shown", passkey=number)

        async def generate_passkey(self):
            return args.passkey if args.passkey is not None else await super().generate_passkey()

    return lambda connection: PairingConfig(sc=not args.legacy, mitm=args.mitm, bonding=not args.no_bonding,
                                            delegate=Delegate(io_capability=io))


def watch_pairing(connection) -> None:
    """Emits pairing (with the keys' kinds and the LTK), pairing-failure and encryption events."""
    def on_pairing(keys):
        ltk = getattr(keys, "ltk", None) or getattr(keys, "ltk_peripheral", None) or getattr(keys, "ltk_central", None)
        emit("pairing", ltk_hex=bytes(ltk.value).hex() if ltk is not None else None,
             irk=getattr(keys, "irk", None) is not None, csrk=getattr(keys, "csrk", None) is not None)

    def on_failure(reason):
        emit("pairing-failure", reason=int(reason))

    def on_encryption():
        emit("encryption", enabled=bool(connection.encryption), key_size=getattr(connection, "encryption_key_size", None))

    connection.on("pairing", on_pairing)
    connection.on("pairing_failure", on_failure)
    connection.on("connection_encryption_change", on_encryption)
