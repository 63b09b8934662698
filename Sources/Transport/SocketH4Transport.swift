#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import BLEWire
import HCI

/// HCI over a byte-stream socket (TCP or unix-domain), framed as on a UART: each packet is its
/// H4 indicator then the packet (Core 5.4, Vol 4, Part A, 2). This is how RootCanal, Bumble's
/// tcp-server/unix transports and btvirt's server mode expose controllers.
///
/// Everything happens on a `SystemEventLoop` and nothing blocks it:
/// - connecting is a non-blocking connect(2) finished when poll(2) reports the socket writable
///   (connect(2), "EINPROGRESS"), bounded by a timeout; every address of a host name is tried;
/// - reads are non-blocking and framed with `H4Framer`, so frames arrive whole however the
///   stream is cut or joined;
/// - `send` writes what the socket takes at once and keeps the rest in a write buffer, drained
///   when the socket is writable again. A peer that stops reading makes the buffer grow; past
///   `writeBufferLimit` the transport fails instead of growing without bound.
///
/// `onClose` is called exactly once, through the loop, with `.closed` when the peer ends the
/// stream between packets (or the owner calls `close()`), `.malformed` when the bytes cannot be
/// H4 (an unknown indicator, with the stream offset and the first 16 octets from there; or the
/// stream ending in the middle of a packet), `.system` with the errno text when a socket call
/// fails (connect refused, timed out, reset). After it nothing more is delivered or sent.
///
/// The owner keeps the transport alive: the loop holds it only weakly, and dropping the last
/// reference closes the socket without calling `onClose`.
///
/// The same class is the server's side of an accepted connection (`H4SocketServer`): there,
/// `send` goes to the connected host and `onFrame` brings the host's commands and ACL data.
public final class SocketH4Transport: HCITransport {
    public enum State: Hashable, Sendable {
        case connecting, open, closed
    }

    /// A write buffer this large holds about a thousand ACL packets of 1 KiB: far more than any
    /// controller leaves unread while it is alive.
    public static let defaultWriteBufferLimit = 1 << 20

    public let endpoint: SocketEndpoint
    public let endpointDescription: String
    public var onFrame: (([UInt8]) -> Void)?
    public var onClose: ((TransportError) -> Void)?
    /// Called through the loop once the connection is established (never after a failure).
    public var onConnect: (() -> Void)?
    public private(set) var state: State
    /// Why the transport closed, as given to `onClose`.
    public private(set) var closeReason: TransportError?
    public let writeBufferLimit: Int

    /// Octets received and sent on the socket so far.
    public private(set) var bytesReceived = 0
    public private(set) var bytesSent = 0
    /// read(2)s that returned data, and frames delivered to `onFrame`.
    public private(set) var readCount = 0
    public private(set) var framesReceived = 0
    /// recv(2) calls made with TCP_QUICKACK armed just before (TCP only; see `readAvailable`).
    public private(set) var quickAckArmCount = 0

    /// While true the socket is not read (its data waits in the kernel, pushing back on the
    /// peer). Frames already read are still delivered.
    public var readsPaused = false {
        didSet { if readsPaused != oldValue { updateReadWatch() } }
    }

    private let loop: SystemEventLoop
    private var fd: Int32 = -1
    private var framer = H4Framer()
    /// The first octets of the packet the framer holds unfinished, for error reports.
    private var pendingHead: [UInt8] = []
    private var writeBuffer: [UInt8] = []
    private var writeHead = 0
    private var readWatch: FDWatch?
    private var writeWatch: FDWatch?
    private var connectTimer: LoopTimer?
    /// Addresses not tried yet, and how the last attempt failed.
    private var candidates: [SocketAddress] = []
    private var lastConnectError: (errno: Int32, operation: String) = (ECONNREFUSED, "connect")
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// The server's bookkeeping, told synchronously when the connection closes.
    var closedInternally: ((SocketH4Transport) -> Void)?

    /// Starts connecting to `endpoint` on `loop`. Failures (refused, no such socket, no answer
    /// within `timeout`) arrive through `onClose`; frames sent meanwhile wait in the write buffer.
    public init(connectingTo endpoint: SocketEndpoint, loop: SystemEventLoop, timeout: TimeSpan = .seconds(5),
                writeBufferLimit: Int = SocketH4Transport.defaultWriteBufferLimit) {
        self.endpoint = endpoint
        self.endpointDescription = endpoint.description
        self.loop = loop
        self.writeBufferLimit = writeBufferLimit
        self.state = .connecting
        do {
            candidates = try SocketAddress.addresses(of: endpoint, passive: false)
        } catch {
            fail(error as? TransportError ?? .system(endpoint: endpointDescription, operation: "resolve", errno: 0, message: "\(error)"))
            return
        }
        connectTimer = loop.schedule(after: timeout) { [weak self] in
            guard let self, self.state == .connecting else { return }
            self.fail(.system(endpoint: self.endpointDescription, operation: "connect", errno: ETIMEDOUT,
                              message: "no answer within \(timeout) (is the controller up and accepting?)"))
        }
        connectToNextAddress()
    }

    /// Connects, running `loop` until the connection is up or has failed, and throws the
    /// `TransportError` on failure. Call it from outside the loop's callbacks (it runs the loop).
    public static func connect(to endpoint: SocketEndpoint, on loop: SystemEventLoop, timeout: TimeSpan = .seconds(5),
                               writeBufferLimit: Int = SocketH4Transport.defaultWriteBufferLimit) throws -> SocketH4Transport {
        let transport = SocketH4Transport(connectingTo: endpoint, loop: loop, timeout: timeout, writeBufferLimit: writeBufferLimit)
        loop.run(until: loop.now + timeout + .milliseconds(100)) { transport.state != .connecting }
        if let reason = transport.closeReason { throw reason }
        guard transport.state == .open else {
            transport.close()
            throw TransportError.system(endpoint: transport.endpointDescription, operation: "connect", errno: ETIMEDOUT,
                                        message: "no answer within \(timeout)")
        }
        return transport
    }

    /// The server side of an accepted connection (non-blocking already).
    init(accepted fd: Int32, endpoint: SocketEndpoint, description: String, loop: SystemEventLoop, writeBufferLimit: Int) {
        self.endpoint = endpoint
        self.endpointDescription = description
        self.loop = loop
        self.writeBufferLimit = writeBufferLimit
        self.state = .connecting
        self.fd = fd
        becomeOpen()
    }

    deinit {
        readWatch?.cancel()
        writeWatch?.cancel()
        connectTimer?.cancel()
        if fd >= 0 { systemClose(fd) }
    }

    /// Octets accepted by `send` but not yet taken by the socket.
    public var pendingWriteCount: Int { writeBuffer.count - writeHead }

    /// Sends one H4 frame (indicator first).
    public func send(_ frame: [UInt8]) { sendRaw(frame) }

    /// Sends `bytes` as they are, without checking that they form whole H4 frames: for bridges,
    /// and for test peers that cut frames on purpose.
    public func sendRaw(_ bytes: [UInt8]) {
        guard state != .closed, !bytes.isEmpty else { return }
        writeBuffer.append(contentsOf: bytes)
        if state == .open, writeWatch == nil { flushWrites() }
        guard state != .closed else { return }
        if pendingWriteCount > writeBufferLimit {
            fail(.system(endpoint: endpointDescription, operation: "send", errno: ENOBUFS,
                         message: "the peer is not reading: \(pendingWriteCount) octets wait to be sent, over the limit of \(writeBufferLimit)"))
        }
    }

    /// Closes the socket now, dropping unsent data; `onClose` gets `.closed`.
    public func close() {
        fail(.closed(endpoint: endpointDescription))
    }

    // MARK: Connecting

    private func connectToNextAddress() {
        while state == .connecting, !candidates.isEmpty {
            let address = candidates.removeFirst()
            let s = openSocket(family: address.family, type: streamSocketType, protocol: 0)
            guard s >= 0 else {
                lastConnectError = (errno, "socket")
                continue
            }
            fd = s
            if systemConnect(s, address) == 0 {
                becomeOpen()
                return
            }
            let code = errno
            if code == EINPROGRESS || code == EINTR {   // both finish asynchronously (connect(2))
                writeWatch = loop.watchWritable(fd: s) { [weak self] in self?.connectFinished() }
                return
            }
            lastConnectError = (code, "connect")
            systemClose(s)
            fd = -1
        }
        guard state == .connecting else { return }
        let (code, operation) = lastConnectError
        fail(.system(endpoint: endpointDescription, operation: operation, errno: code, message: Self.connectMessage(code)))
    }

    private func connectFinished() {
        writeWatch?.cancel()
        writeWatch = nil
        guard state == .connecting else { return }
        let code = pendingSocketError(fd)
        if code == 0 {
            becomeOpen()
            return
        }
        lastConnectError = (code, "connect")
        systemClose(fd)
        fd = -1
        connectToNextAddress()
    }

    private static func connectMessage(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: return "\(errnoMessage(code)) (is a controller listening there?)"
        case ENOENT: return "\(errnoMessage(code)) (no socket at that path: is the controller running?)"
        case EAGAIN: return "\(errnoMessage(code)) (the listener's backlog is full)"
        default: return errnoMessage(code)
        }
    }

    private func becomeOpen() {
        state = .open
        connectTimer?.cancel()
        connectTimer = nil
        if case .tcp = endpoint { setSocketOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1) }
        updateReadWatch()
        if pendingWriteCount > 0 { flushWrites() }
        guard state == .open else { return }
        loop.execute { [self] in
            if state == .open { onConnect?() }
        }
    }

    // MARK: Reading

    private func updateReadWatch() {
        let wanted = state == .open && !readsPaused
        if wanted, readWatch == nil {
            readWatch = loop.watchReadable(fd: fd) { [weak self] in self?.readAvailable() }
        } else if !wanted, let watch = readWatch {
            watch.cancel()
            readWatch = nil
        }
    }

    /// Reads until the socket would block (at most 16 reads per turn, so one busy peer cannot
    /// starve the others), delivering each whole frame.
    ///
    /// On TCP, TCP_QUICKACK is set before every recv(2): RootCanal writes each packet as two
    /// send(2)s (indicator, then the rest) with Nagle's algorithm on, so the rest waits for our
    /// ACK of the indicator, which Linux delays up to 40 ms — ~44 ms per event without it,
    /// 0.1–5 ms with it (docs/tiers.md, "Latency: RootCanal and Nagle"). The kernel clears the
    /// option again as it sees fit, so it is re-armed every time.
    private func readAvailable() {
        for _ in 0..<16 {
            guard state == .open, !readsPaused else { return }
            if case .tcp = endpoint, armQuickAck() { quickAckArmCount += 1 }
            let n = readBuffer.withUnsafeMutableBytes { systemRecv(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                readCount += 1
                deliver(Array(readBuffer[0..<n]))
                continue
            }
            if n == 0 {
                endOfStream()
                return
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return }
            fail(.system(endpoint: endpointDescription, operation: "read", errno: code, message: errnoMessage(code)))
            return
        }
    }

    /// Sets TCP_QUICKACK (Linux; elsewhere nothing): acknowledge at once what arrives next.
    /// Returns whether the option was set.
    @discardableResult
    func armQuickAck() -> Bool {
#if os(Linux)
        return setSocketOption(fd, level: Int32(IPPROTO_TCP), name: Int32(TCP_QUICKACK), value: 1)
#else
        return false
#endif
    }

    /// The socket, for tests that inspect its options (-1 once closed).
    var descriptor: Int32 { fd }

    private struct Closed: Error {}

    private func deliver(_ chunk: [UInt8]) {
        let chunkOffset = bytesReceived
        bytesReceived += chunk.count
        do {
            try framer.feed(chunk) { frame in
                guard self.state == .open else { throw Closed() }
                self.framesReceived += 1
                self.onFrame?(frame)
            }
        } catch is Closed {
            return
        } catch let error as DecodeError {
            fail(.malformed(endpoint: endpointDescription, detail: Self.describe(error, chunk: chunk, chunkOffset: chunkOffset)))
            return
        } catch {
            fail(.malformed(endpoint: endpointDescription, detail: "\(error)"))
            return
        }
        let pending = framer.pendingCount
        if pending == 0 {
            pendingHead = []
        } else if pending <= chunk.count {
            pendingHead = Array(chunk.suffix(pending).prefix(16))
        } else {   // no frame ended in this chunk: the unfinished one began earlier
            pendingHead = Array((pendingHead + chunk).prefix(16))
        }
    }

    /// "unknown H4 packet indicator 0xff at stream offset 7: ff 00 01 (…)"
    static func describe(_ error: DecodeError, chunk: [UInt8], chunkOffset: Int) -> String {
        guard case let .unknownType(_, value, at) = error else { return "\(error)" }
        let index = at - chunkOffset
        let bytes = index >= 0 && index < chunk.count ? Array(chunk[index...]) : []
        return "unknown H4 packet indicator 0x\(hexPreview([UInt8(truncatingIfNeeded: value)])) at stream offset \(at): "
            + hexPreview(bytes)
            + " (an H4 packet starts with 01 command, 02 ACL, 03 SCO, 04 event or 05 ISO)"
    }

    private func endOfStream() {
        let pending = framer.pendingCount
        guard pending > 0 else {
            fail(.closed(endpoint: endpointDescription))
            return
        }
        let type = pendingHead.first.map { H4PacketType(rawValue: $0).description } ?? "packet"
        fail(.malformed(endpoint: endpointDescription,
                        detail: "connection closed in the middle of a packet: \(pending) octet(s) of an unfinished \(type) "
                            + "at stream offset \(bytesReceived - pending): \(hexPreview(pendingHead, limit: 16))\(pending > 16 ? " …" : "")"))
    }

    // MARK: Writing

    private func flushWrites() {
        while writeHead < writeBuffer.count {
            let n = writeBuffer.withUnsafeBytes { raw in
                systemSend(fd, raw.baseAddress! + writeHead, raw.count - writeHead)
            }
            if n > 0 {
                writeHead += n
                bytesSent += n
                continue
            }
            let code = errno
            if n < 0, code == EINTR { continue }
            if n == 0 || code == EAGAIN || code == EWOULDBLOCK {
                if writeHead >= 64 * 1024, writeHead * 2 >= writeBuffer.count {
                    writeBuffer.removeFirst(writeHead)
                    writeHead = 0
                }
                if writeWatch == nil {
                    writeWatch = loop.watchWritable(fd: fd) { [weak self] in self?.flushWrites() }
                }
                return
            }
            fail(.system(endpoint: endpointDescription, operation: "write", errno: code, message: errnoMessage(code)))
            return
        }
        writeBuffer.removeAll(keepingCapacity: writeBuffer.count <= 64 * 1024)
        writeHead = 0
        writeWatch?.cancel()
        writeWatch = nil
    }

    // MARK: Closing

    private func fail(_ error: TransportError) {
        guard state != .closed else { return }
        state = .closed
        closeReason = error
        connectTimer?.cancel()
        readWatch?.cancel()
        writeWatch?.cancel()
        connectTimer = nil
        readWatch = nil
        writeWatch = nil
        if fd >= 0 {
            systemClose(fd)
            fd = -1
        }
        writeBuffer = []
        writeHead = 0
        candidates = []
        if let bookkeeping = closedInternally {
            closedInternally = nil
            bookkeeping(self)
        }
        loop.execute { [self] in
            let handler = onClose
            onClose = nil
            onFrame = nil
            onConnect = nil
            handler?(error)
        }
    }
}
