#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime

/// Listens for H4 connections on a TCP address or a unix-domain socket and hands each accepted
/// connection over as a `SocketH4Transport` (framed, non-blocking, buffered, on the same loop).
///
/// Two uses: a fake controller for testing `SocketH4Transport`, and exposing BLELab's own
/// simulated controllers to an external host stack (Bumble as central, say) with
/// `serveControllers`, which joins each connection to a controller's input and output.
///
/// bind(2), listen(2) and accept(2) per POSIX; the listening socket is non-blocking and polled on
/// the loop. A unix-socket path the server created is unlinked when it closes.
public final class H4SocketServer {
    /// Where the server listens, with the real port when port 0 asked for an ephemeral one.
    public let endpoint: SocketEndpoint
    /// Called on the loop with each new connection (already open and being read): set its
    /// `onFrame` and `onClose` here.
    public var onConnection: ((SocketH4Transport) -> Void)?
    /// Open connections, oldest first; a connection leaves this list when it closes.
    public private(set) var connections: [SocketH4Transport] = []
    /// Connections accepted since the server started.
    public private(set) var acceptedCount = 0
    /// The last accept(2) failure that was not the peer's doing (EMFILE, ENOBUFS…), if any.
    public private(set) var lastAcceptError: TransportError?

    private let loop: SystemEventLoop
    private let writeBufferLimit: Int
    private var fd: Int32
    private var acceptWatch: FDWatch?
    private var retryTimer: LoopTimer?
    private var unixPathToRemove: String?

    /// Binds and listens on `endpoint` (`tcp:127.0.0.1:0` for an ephemeral port, `unix:/path`).
    /// Throws `TransportError.system` naming the endpoint and the call that failed.
    public init(listeningOn endpoint: SocketEndpoint, loop: SystemEventLoop, backlog: Int32 = 16,
                writeBufferLimit: Int = SocketH4Transport.defaultWriteBufferLimit) throws {
        self.loop = loop
        self.writeBufferLimit = writeBufferLimit
        let name = endpoint.description
        func failure(_ operation: String, _ code: Int32, _ hint: String = "") -> TransportError {
            .system(endpoint: name, operation: operation, errno: code, message: errnoMessage(code) + hint)
        }
        guard let address = try SocketAddress.addresses(of: endpoint, passive: true).first else {
            throw TransportError.system(endpoint: name, operation: "resolve", errno: 0, message: "no address")
        }
        let s = openSocket(family: address.family, type: streamSocketType, protocol: 0)
        guard s >= 0 else { throw failure("socket", errno) }
        if case .tcp = endpoint { setSocketOption(s, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1) }
        let bound = address.withSockaddr { systemBind(s, $0, $1) }
        guard bound == 0 else {
            let code = errno
            systemClose(s)
            let hint = code == EADDRINUSE && address.family == AF_UNIX ? " (a file is already at that path: a stale socket? remove it)" : ""
            throw failure("bind", code, hint)
        }
        if case let .unix(path) = endpoint { unixPathToRemove = path }
        guard systemListen(s, backlog) == 0 else {
            let code = errno
            systemClose(s)
            if let path = unixPathToRemove { systemUnlink(path) }
            throw failure("listen", code)
        }
        fd = s
        if case let .tcp(host, port) = endpoint, port == 0, let actual = SocketAddress.of(fd: s, peer: false)?.port {
            self.endpoint = .tcp(host: host, port: actual)
        } else {
            self.endpoint = endpoint
        }
        acceptWatch = loop.watchReadable(fd: s) { [weak self] in self?.acceptPending() }
    }

    deinit {
        close()
    }

    public var isListening: Bool { fd >= 0 }

    /// Joins every new connection to a controller: `attach` gets the connection and a function
    /// that sends H4 frames to the connected host (the controller's output; it does nothing once
    /// the connection closed), and returns the controller's input, which is then called with
    /// each whole frame the host sends (e.g. `SimController.receive(fromHost:)`). Set the
    /// connection's `onClose` in `attach` to learn when the host goes away.
    public func serveControllers(_ attach: @escaping (_ connection: SocketH4Transport,
                                                      _ toHost: @escaping ([UInt8]) -> Void) -> ([UInt8]) -> Void) {
        onConnection = { connection in
            let toHost: ([UInt8]) -> Void = { [weak connection] frame in connection?.send(frame) }
            connection.onFrame = attach(connection, toHost)
        }
    }

    /// Stops listening and closes every open connection (each is told `.closed`).
    public func close() {
        stopListening()
        for connection in connections { connection.close() }
    }

    /// Stops accepting; open connections carry on.
    public func stopListening() {
        acceptWatch?.cancel()
        acceptWatch = nil
        retryTimer?.cancel()
        retryTimer = nil
        if fd >= 0 {
            systemClose(fd)
            fd = -1
        }
        if let path = unixPathToRemove {
            systemUnlink(path)
            unixPathToRemove = nil
        }
    }

    private func acceptPending() {
        while fd >= 0 {
            let s = systemAccept(fd)
            if s < 0 {
                let code = errno
                switch code {
                case EAGAIN, EWOULDBLOCK:
                    return
                case EINTR, ECONNABORTED, EPROTO:   // the peer gave up before we accepted: next
                    continue
                default:
                    // Out of descriptors or memory: the listener stays readable, so pause
                    // instead of spinning, and try again shortly.
                    lastAcceptError = .system(endpoint: endpoint.description, operation: "accept", errno: code,
                                              message: errnoMessage(code))
                    acceptWatch?.cancel()
                    acceptWatch = nil
                    retryTimer = loop.schedule(after: .milliseconds(100)) { [weak self] in
                        guard let self, self.fd >= 0 else { return }
                        self.acceptWatch = self.loop.watchReadable(fd: self.fd) { [weak self] in self?.acceptPending() }
                    }
                    return
                }
            }
            let flagsError = makeNonBlockingAndCloseOnExec(s)
            guard flagsError == 0 else {
                systemClose(s)
                continue
            }
            acceptedCount += 1
            var description = "\(endpoint.description), connection \(acceptedCount)"
            if let peer = SocketAddress.of(fd: s, peer: true)?.numericDescription { description += " from \(peer)" }
            let connection = SocketH4Transport(accepted: s, endpoint: endpoint, description: description, loop: loop,
                                               writeBufferLimit: writeBufferLimit)
            connection.closedInternally = { [weak self] closed in
                self?.connections.removeAll { $0 === closed }
            }
            connections.append(connection)
            onConnection?(connection)
        }
    }
}
