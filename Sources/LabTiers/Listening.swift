import Transport

/// Whether something listens on an endpoint, found without connecting: a probe connection to
/// RootCanal creates a controller, and one to a lab Bumble endpoint could be taken for the host
/// (docs/tiers.md, "Readiness and cleanup").
public enum Listening {
    /// True when /proc/net/tcp or /proc/net/tcp6 lists a socket in state 0A (LISTEN) on `port`.
    public static func tcp(port: UInt16) -> Bool {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = FileSystemPaths.read(table) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st …; local_address is HEXADDR:HEXPORT
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 3, fields[3] == "0A", let colon = fields[1].lastIndex(of: ":"),
                      let local = UInt16(fields[1][fields[1].index(after: colon)...], radix: 16) else { continue }
                if local == port { return true }
            }
        }
        return false
    }

    /// How many connections wait in the accept queue of the socket listening on TCP `port`
    /// (/proc/net/tcp shows it as rx_queue of the LISTEN entry); nil when nothing local listens.
    public static func acceptQueueLength(port: UInt16) -> Int? {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = FileSystemPaths.read(table) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx_queue:rx_queue …
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 4, fields[3] == "0A", let colon = fields[1].lastIndex(of: ":"),
                      UInt16(fields[1][fields[1].index(after: colon)...], radix: 16) == port,
                      let queues = fields[4].split(separator: ":").last, let length = Int(queues, radix: 16) else { continue }
                return length
            }
        }
        return nil
    }

    /// True when /proc/net/unix lists a listening stream socket (flag 0x10000) bound to `path`.
    public static func unix(path: String) -> Bool {
        guard let text = FileSystemPaths.read("/proc/net/unix") else { return false }
        for line in text.split(separator: "\n").dropFirst() {
            // Num RefCount Protocol Flags Type St Inode Path
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[7] == path, let flags = UInt32(fields[3], radix: 16) else { continue }
            if flags & 0x10000 != 0 { return true }
        }
        return false
    }

    public static func endpoint(_ endpoint: SocketEndpoint) -> Bool {
        switch endpoint {
        case let .tcp(_, port): return tcp(port: port)
        case let .unix(path): return unix(path: path)
        }
    }
}
