/// Where an H4 byte stream lives: a TCP address (RootCanal's 127.0.0.1:6402, Bumble's
/// tcp-server) or a unix-domain socket path (Bumble's unix:, btvirt's server mode).
///
/// Written as `tcp:HOST:PORT`, `unix:PATH` or plain `HOST:PORT` (an IPv6 host in brackets:
/// `tcp:[::1]:6402`). A bare absolute path (`/tmp/bt-server-le`) is a unix socket too. Port 0 asks a
/// server for an ephemeral port.
public enum SocketEndpoint: Hashable, Sendable, CustomStringConvertible {
    case tcp(host: String, port: UInt16)
    case unix(path: String)

    /// Parses `tcp:127.0.0.1:6402`, `unix:/tmp/x`, `localhost:6402`, `[::1]:6402` or `/tmp/x`.
    public init(parsing text: String) throws {
        func invalid(_ reason: String) -> SocketEndpointError { SocketEndpointError(text: text, reason: reason) }
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard !path.isEmpty else { throw invalid("the path after 'unix:' is empty") }
            self = .unix(path: path)
            return
        }
        if text.hasPrefix("/") {
            self = .unix(path: text)
            return
        }
        let rest = text.hasPrefix("tcp:") ? String(text.dropFirst(4)) : text
        guard let colon = rest.lastIndex(of: ":") else {
            throw invalid("expected tcp:HOST:PORT, unix:PATH or HOST:PORT")
        }
        var host = String(rest[..<colon])
        let portText = String(rest[rest.index(after: colon)...])
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw invalid("an IPv6 host needs its closing ']', as in tcp:[::1]:6402") }
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw invalid("write an IPv6 host in brackets, as in tcp:[::1]:6402")
        }
        guard !host.isEmpty else { throw invalid("the host before ':\(portText)' is empty") }
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portText) else {
            throw invalid("the port '\(portText)' is not a number from 0 to 65535")
        }
        self = .tcp(host: host, port: port)
    }

    /// For messages: "tcp 127.0.0.1:6402", "unix /tmp/bt-server-le".
    public var description: String {
        switch self {
        case let .tcp(host, port): return "tcp \(Self.hostForDisplay(host)):\(port)"
        case let .unix(path): return "unix \(path)"
        }
    }

    /// The form `init(parsing:)` reads back: "tcp:127.0.0.1:6402", "unix:/tmp/x".
    public var argument: String {
        switch self {
        case let .tcp(host, port): return "tcp:\(Self.hostForDisplay(host)):\(port)"
        case let .unix(path): return "unix:\(path)"
        }
    }

    private static func hostForDisplay(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}

/// A socket endpoint string that cannot be read.
public struct SocketEndpointError: Error, Hashable, Sendable, CustomStringConvertible {
    public var text: String
    public var reason: String

    public init(text: String, reason: String) {
        self.text = text
        self.reason = reason
    }

    public var description: String { "'\(text)' is not a socket endpoint: \(reason)" }
}
