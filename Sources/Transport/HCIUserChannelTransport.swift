#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import HCI

/// Why the HCI user channel could not be opened. `message` says what to do about it.
public enum HCIUserChannelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// socket(2) gave EAFNOSUPPORT or EPROTONOSUPPORT: the kernel was built without CONFIG_BT
    /// (or the bluetooth module is not loaded).
    case noBluetoothSupport(device: UInt16, errno: Int32)
    /// bind(2) gave EBUSY (the controller is up, or being set up, under the kernel's own stack)
    /// or EUSERS (another process holds its user channel).
    case deviceBusy(device: UInt16, errno: Int32)
    /// bind(2) gave EPERM or EACCES: the user channel needs CAP_NET_ADMIN.
    case needsNetAdmin(device: UInt16, errno: Int32)
    /// bind(2) gave ENODEV: there is no hciN.
    case noSuchDevice(device: UInt16, errno: Int32)
    /// Any other failure of `operation`.
    case system(device: UInt16, operation: String, errno: Int32, message: String)

    public var device: UInt16 {
        switch self {
        case let .noBluetoothSupport(device, _), let .deviceBusy(device, _), let .needsNetAdmin(device, _),
             let .noSuchDevice(device, _), let .system(device, _, _, _):
            return device
        }
    }

    public var errno: Int32 {
        switch self {
        case let .noBluetoothSupport(_, code), let .deviceBusy(_, code), let .needsNetAdmin(_, code),
             let .noSuchDevice(_, code), let .system(_, _, code, _):
            return code
        }
    }

    /// What went wrong and what to do, without the device prefix or errno.
    public var message: String {
        switch self {
        case .noBluetoothSupport:
            return "this kernel has no Bluetooth support (CONFIG_BT); use the vhci micro-VM tier (make e2e-vhci)"
        case let .deviceBusy(device, _):
            return "hci\(device) is busy or up: bring it down (hciconfig hci\(device) down / btmgmt power off) or stop bluetoothd"
        case .needsNetAdmin:
            return "needs CAP_NET_ADMIN (run as root or with --cap-add NET_ADMIN)"
        case let .noSuchDevice(device, _):
            return "no controller hci\(device)"
        case let .system(_, operation, _, message):
            return "\(operation) failed: \(message)"
        }
    }

    /// "hci0 (HCI user channel): <message> (errno 97: Address family not supported by protocol)"
    public var description: String {
        "\(HCIUserChannelTransport.endpointName(device)): \(message) (errno \(errno): \(errnoMessage(errno)))"
    }

    /// The error for errno `code` from `operation` ("socket" or "bind") on hci`device`.
    public init(failedCall operation: String, errno code: Int32, device: UInt16) {
        switch (operation, code) {
        case ("socket", EAFNOSUPPORT), ("socket", EPROTONOSUPPORT): self = .noBluetoothSupport(device: device, errno: code)
        case (_, EBUSY), (_, EUSERS): self = .deviceBusy(device: device, errno: code)
        case (_, EPERM), (_, EACCES): self = .needsNetAdmin(device: device, errno: code)
        case (_, ENODEV): self = .noSuchDevice(device: device, errno: code)
        default: self = .system(device: device, operation: operation, errno: code, message: errnoMessage(code))
        }
    }
}

/// HCI through the Linux kernel's HCI user channel: a raw Bluetooth socket bound to one
/// controller (hciN) with HCI_CHANNEL_USER, which gives this process the controller to itself,
/// byte for byte, as a UART would (BlueZ's btproxy and Bumble's hci-socket transport use it).
///
///     socket(AF_BLUETOOTH = 31, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, BTPROTO_HCI = 1)
///     bind({ hci_family 31, hci_dev N, hci_channel 1 })        // see HCISocketAddress
///
/// Each read returns one whole packet with its H4 indicator first (Core 5.4, Vol 4, Part A, 2),
/// each write sends one; the transport checks that every packet read is exactly one H4 packet.
/// Opening needs CAP_NET_ADMIN and the controller down (not managed by bluetoothd); failures are
/// `HCIUserChannelError`s that say what to do. Kernel sources: net/bluetooth/hci_sock.c.
public final class HCIUserChannelTransport: HCITransport {
    public let device: UInt16
    public let endpointDescription: String
    public var onFrame: (([UInt8]) -> Void)?
    public var onClose: ((TransportError) -> Void)?
    public private(set) var isClosed = false
    public private(set) var closeReason: TransportError?
    /// Octets that may wait for the socket to take them before the transport gives up.
    public let writeQueueLimit: Int
    public private(set) var packetsReceived = 0
    public private(set) var bytesReceived = 0

    private let loop: SystemEventLoop
    private var fd: Int32
    private var readWatch: FDWatch?
    private var writeWatch: FDWatch?
    private var writeQueue = FIFO<[UInt8]>()
    private var queuedOctets = 0
    /// Big enough for any HCI packet: an ACL packet is at most 1 + 4 + 65535 octets.
    private var readBuffer = [UInt8](repeating: 0, count: 1 + 4 + 65_535 + 1)

    /// "hci0 (HCI user channel)".
    public static func endpointName(_ device: UInt16) -> String { "hci\(device) (HCI user channel)" }

    /// Opens hci`device`'s user channel. Throws `HCIUserChannelError`.
    public init(device: UInt16, loop: SystemEventLoop, writeQueueLimit: Int = 1 << 20) throws {
        self.device = device
        self.endpointDescription = Self.endpointName(device)
        self.loop = loop
        self.writeQueueLimit = writeQueueLimit
        let s = openSocket(family: LinuxBluetooth.addressFamily, type: rawSocketType, protocol: LinuxBluetooth.protocolHCI)
        guard s >= 0 else { throw HCIUserChannelError(failedCall: "socket", errno: errno, device: device) }
        let address = HCISocketAddress(device: device).bytes
        let bound = address.withUnsafeBytes { raw in
            systemBind(s, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            let code = errno
            systemClose(s)
            throw HCIUserChannelError(failedCall: "bind", errno: code, device: device)
        }
        fd = s
        readWatch = loop.watchReadable(fd: s) { [weak self] in self?.readAvailable() }
    }

    /// Over a socket that is already open and keeps packet boundaries (a SOCK_SEQPACKET
    /// socketpair in the tests, standing in for the kernel).
    init(packetSocket fd: Int32, device: UInt16, loop: SystemEventLoop, writeQueueLimit: Int = 1 << 20) {
        self.device = device
        self.endpointDescription = Self.endpointName(device)
        self.loop = loop
        self.writeQueueLimit = writeQueueLimit
        self.fd = fd
        readWatch = loop.watchReadable(fd: fd) { [weak self] in self?.readAvailable() }
    }

    deinit {
        readWatch?.cancel()
        writeWatch?.cancel()
        if fd >= 0 { systemClose(fd) }
    }

    /// Sends one H4 frame (indicator first) as one packet.
    public func send(_ frame: [UInt8]) {
        guard !isClosed, !frame.isEmpty else { return }
        writeQueue.append(frame)
        queuedOctets += frame.count
        if writeWatch == nil { flushWrites() }
        guard !isClosed else { return }
        if queuedOctets > writeQueueLimit {
            fail(.system(endpoint: endpointDescription, operation: "send", errno: ENOBUFS,
                         message: "the controller is not taking packets: \(queuedOctets) octets queued, over the limit of \(writeQueueLimit)"))
        }
    }

    /// Closes the socket (the kernel hands the controller back, down); `onClose` gets `.closed`.
    public func close() { fail(.closed(endpoint: endpointDescription)) }

    private func readAvailable() {
        for _ in 0..<64 {
            guard !isClosed else { return }
            let n = readBuffer.withUnsafeMutableBytes { systemRecv(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                let packet = Array(readBuffer[0..<n])
                let offset = bytesReceived
                bytesReceived += n
                packetsReceived += 1
                guard Self.isOneWholeH4Packet(packet) else {
                    fail(.malformed(endpoint: endpointDescription,
                                    detail: "packet \(packetsReceived) (\(n) octets, stream offset \(offset)) is not one whole H4 packet: \(hexPreview(packet))"))
                    return
                }
                onFrame?(packet)
                continue
            }
            if n == 0 {   // the socket was shut down
                fail(.closed(endpoint: endpointDescription))
                return
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return }
            fail(.system(endpoint: endpointDescription, operation: "read", errno: code, message: Self.runtimeMessage(code)))
            return
        }
    }

    private func flushWrites() {
        while let frame = writeQueue.first {
            let n = frame.withUnsafeBytes { systemSend(fd, $0.baseAddress!, $0.count) }
            if n >= 0 {
                _ = writeQueue.popFirst()
                queuedOctets -= frame.count
                continue
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK || code == ENOBUFS {
                if writeWatch == nil {
                    writeWatch = loop.watchWritable(fd: fd) { [weak self] in self?.flushWrites() }
                }
                return
            }
            fail(.system(endpoint: endpointDescription, operation: "write", errno: code, message: Self.runtimeMessage(code)))
            return
        }
        writeWatch?.cancel()
        writeWatch = nil
    }

    private static func runtimeMessage(_ code: Int32) -> String {
        code == EPIPE || code == ENODEV || code == ENETDOWN
            ? "\(errnoMessage(code)) (the controller was removed or reset by the kernel)"
            : errnoMessage(code)
    }

    /// True when `packet` is exactly one H4 packet: a known indicator and a length field that
    /// matches the octets that follow.
    static func isOneWholeH4Packet(_ packet: [UInt8]) -> Bool {
        var framer = H4Framer()
        var frames = 0
        do { try framer.feed(packet) { _ in frames += 1 } } catch { return false }
        return frames == 1 && framer.pendingCount == 0
    }

    private func fail(_ error: TransportError) {
        guard !isClosed else { return }
        isClosed = true
        closeReason = error
        readWatch?.cancel()
        writeWatch?.cancel()
        readWatch = nil
        writeWatch = nil
        if fd >= 0 {
            systemClose(fd)
            fd = -1
        }
        writeQueue.removeAll()
        queuedOctets = 0
        loop.execute { [self] in
            let handler = onClose
            onClose = nil
            onFrame = nil
            handler?(error)
        }
    }
}
