#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// POSIX socket plumbing shared by the socket transports, the server and the HCI user channel:
// addresses, descriptor flags and errno text. Nothing here blocks except getaddrinfo(3) on a
// host name that is not a numeric address (see `SocketAddress.resolve`).

#if canImport(Glibc)
let streamSocketType = Int32(SOCK_STREAM.rawValue)
let rawSocketType = Int32(SOCK_RAW.rawValue)
#else
let streamSocketType = SOCK_STREAM
let rawSocketType = SOCK_RAW
#endif

/// strerror(3) of `code`.
func errnoMessage(_ code: Int32) -> String { String(cString: strerror(code)) }

/// "ff 00 01" for at most `limit` octets, with " …" when there were more.
func hexPreview<C: Collection>(_ bytes: C, limit: Int = 16) -> String where C.Element == UInt8 {
    let digits = Array("0123456789abcdef")
    var parts: [String] = []
    for b in bytes.prefix(limit) { parts.append(String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])) }
    return parts.joined(separator: " ") + (bytes.count > limit ? " …" : "")
}

/// A socket address as bytes (any family), with its length: what connect(2), bind(2) and
/// accept(2) take and give.
struct SocketAddress {
    var bytes: [UInt8]
    var family: Int32

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    /// unix(7): `sockaddr_un` with the path and its terminating NUL. Paths longer than sun_path
    /// (107 octets and the NUL on Linux) fail with ENAMETOOLONG.
    static func unix(path: String, endpoint: String) throws -> SocketAddress {
        let pathBytes = Array(path.utf8)
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        let capacity = MemoryLayout<sockaddr_un>.size - pathOffset
        guard pathBytes.count < capacity else {
            throw TransportError.system(endpoint: endpoint, operation: "address", errno: ENAMETOOLONG,
                                        message: "unix socket path is \(pathBytes.count) octets; the limit is \(capacity - 1)")
        }
        guard !pathBytes.contains(0) else {
            throw TransportError.system(endpoint: endpoint, operation: "address", errno: EINVAL,
                                        message: "unix socket path contains a NUL octet")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = withUnsafeBytes(of: &address) { Array($0.prefix(pathOffset)) }
        bytes += pathBytes
        bytes.append(0)
        return SocketAddress(bytes: bytes, family: AF_UNIX)
    }

    /// getaddrinfo(3) for a TCP endpoint, every address in the resolver's order (so "localhost"
    /// tries ::1, then 127.0.0.1). A numeric host answers at once; a name may block on DNS.
    static func resolve(host: String, port: UInt16, passive: Bool, endpoint: String) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocketType
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            let message = status == EAI_SYSTEM ? errnoMessage(errno) : String(cString: gai_strerror(status))
            throw TransportError.system(endpoint: endpoint, operation: "resolve", errno: status == EAI_SYSTEM ? errno : 0,
                                        message: "cannot resolve '\(host)': \(message)")
        }
        defer { freeaddrinfo(list) }
        var result: [SocketAddress] = []
        var entry = list
        while let e = entry {
            if let address = e.pointee.ai_addr, e.pointee.ai_family == AF_INET || e.pointee.ai_family == AF_INET6 {
                let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(e.pointee.ai_addrlen)))
                result.append(SocketAddress(bytes: bytes, family: e.pointee.ai_family))
            }
            entry = e.pointee.ai_next
        }
        guard !result.isEmpty else {
            throw TransportError.system(endpoint: endpoint, operation: "resolve", errno: 0,
                                        message: "'\(host)' has no IPv4 or IPv6 address")
        }
        return result
    }

    /// The addresses of `endpoint` (one for unix, possibly several for tcp).
    static func addresses(of endpoint: SocketEndpoint, passive: Bool) throws -> [SocketAddress] {
        switch endpoint {
        case let .unix(path): return [try unix(path: path, endpoint: endpoint.description)]
        case let .tcp(host, port): return try resolve(host: host, port: port, passive: passive, endpoint: endpoint.description)
        }
    }

    /// getnameinfo(3) numeric form: "127.0.0.1:53122", "[::1]:53122"; nil for other families.
    var numericDescription: String? {
        guard family == AF_INET || family == AF_INET6 else { return nil }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withSockaddr { address, length in
            getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                        NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard status == 0 else { return nil }
        let h = String(cString: host), s = String(cString: service)
        return family == AF_INET6 ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    /// getsockname(2) or getpeername(2) of `fd`.
    static func of(fd: Int32, peer: Bool) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                peer ? getpeername(fd, address, &length) : getsockname(fd, address, &length)
            }
        }
        guard status == 0 else { return nil }
        let bytes = withUnsafeBytes(of: &storage) { Array($0.prefix(Int(length))) }
        return SocketAddress(bytes: bytes, family: Int32(storage.ss_family))
    }

    /// The port of an AF_INET/AF_INET6 address (network order in the structure).
    var port: UInt16? {
        guard bytes.count >= 4, family == AF_INET || family == AF_INET6 else { return nil }
        return UInt16(bytes[2]) << 8 | UInt16(bytes[3])   // sin_port / sin6_port follow the family
    }
}

/// fcntl(2): O_NONBLOCK and FD_CLOEXEC on a descriptor accept(2) returned (Glibc's Swift module
/// has no accept4). Returns errno, or 0.
func makeNonBlockingAndCloseOnExec(_ fd: Int32) -> Int32 {
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { return errno }
    let fdFlags = fcntl(fd, F_GETFD)
    guard fdFlags >= 0, fcntl(fd, F_SETFD, fdFlags | FD_CLOEXEC) == 0 else { return errno }
    return 0
}

/// The error a non-blocking connect(2) ended with (getsockopt SO_ERROR), or 0.
func pendingSocketError(_ fd: Int32) -> Int32 {
    var code: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
    return code
}

/// setsockopt(2) of an int option; returns whether it succeeded.
@discardableResult
func setSocketOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) -> Bool {
    var v = value
    return setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) == 0
}

/// `socket(2)` with SOCK_NONBLOCK | SOCK_CLOEXEC.
func openSocket(family: Int32, type: Int32, protocol: Int32) -> Int32 {
#if canImport(Glibc)
    return socket(family, type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
#else
    let fd = socket(family, type, `protocol`)
    if fd >= 0, makeNonBlockingAndCloseOnExec(fd) != 0 { close(fd); return -1 }
    return fd
#endif
}

// File-scope wrappers: inside the transport classes `send`, `recv`, `connect`, `bind`, `listen`,
// `accept` and `close` would name their own members.

/// send(2) with MSG_NOSIGNAL, so a peer that went away gives EPIPE instead of killing the
/// process with SIGPIPE.
func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
#if canImport(Glibc)
    return send(fd, bytes, count, Int32(MSG_NOSIGNAL))
#else
    return send(fd, bytes, count, 0)
#endif
}

func systemRecv(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { recv(fd, buffer, count, 0) }

func systemConnect(_ fd: Int32, _ address: SocketAddress) -> Int32 {
    address.withSockaddr { connect(fd, $0, $1) }
}

func systemBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { bind(fd, address, length) }

func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }

func systemAccept(_ fd: Int32) -> Int32 { accept(fd, nil, nil) }

@discardableResult func systemUnlink(_ path: String) -> Int32 { unlink(path) }
