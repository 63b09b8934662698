import BLELab
import ScenarioFormat
import Transport

/// A `--transport` value that names a transport but cannot be read.
public struct TransportValueError: Error, CustomStringConvertible {
    public var value: String
    public var reason: String
    public var description: String { "'\(value)': \(reason)" }
}

/// The `--transport` values this build offers, and the backend each one makes.
public enum TransportCatalog {
    /// One line per value, for `blelab run --help` and for "not available" messages.
    public static let values: [(syntax: String, meaning: String)] = [
        ("sim", "the embedded simulator, on virtual time (the default)"),
        ("rootcanal", "RootCanal \(RootCanalProcess.version) from the venv (make venv), started on free ports"),
        ("rootcanal:HOST:PORT", "a running RootCanal: each device a new connection to its HCI port"),
        ("bumble", "Bumble \(RealControllerBackend.bumbleVersion) controllers on a LocalLink, a TCP endpoint per device"),
        ("bumble:unix", "the same on unix sockets"),
        ("h4:EP,EP,…", "H4 sockets, one per device in order (tcp:HOST:PORT, HOST:PORT, unix:PATH)"),
        ("hci-user:N,N,…", "hciN through the HCI user channel, one per device (tier vhci)"),
        ("hci-user:N,N/N,N…", "groups of controllers on airs of their own: one --jobs job on each"),
    ]

    /// "this build offers: sim, rootcanal[:HOST:PORT], bumble[:unix], h4:EP,EP,…, hci-user:N,N,…[/…]"
    public static let offered = "this build offers: sim, rootcanal[:HOST:PORT], bumble[:unix], h4:EP,EP,…, hci-user:N,N,…[/…]"

    /// The lines `blelab run --help` shows under --transport (`Help.transportValues`).
    public static var helpLines: String {
        let width = values.map(\.syntax.count).max() ?? 0
        return values.map { $0.syntax + String(repeating: " ", count: width - $0.syntax.count + 2) + $0.meaning }
            .joined(separator: "\n")
    }

    /// The backend for a `--transport` value; nil when the value names no transport this build
    /// has; throws when it names one but the rest cannot be read.
    public static func backend(for value: String, environment: @autoclosure () -> TierEnvironment = .current()) throws -> ScenarioBackend? {
        let airs = try sources(for: value)
        guard let source = airs.first else {
            return value == TransportTier.sim.rawValue ? SimBackend() : nil
        }
        let backend = RealControllerBackend(source: source, environment: environment())
        backend.otherAirs = Array(airs.dropFirst())
        return backend
    }

    /// Each group of an `hci-user` value whose groups are separated by `/` (`hci-user:0,1/2,3`:
    /// controllers on airs of their own), as a source of its own; one source for other values;
    /// none for `sim` and unknown values. (h4 has no groups: a unix socket's path has slashes.)
    public static func sources(for value: String) throws -> [RealControllerBackend.Source] {
        let (name, rest) = split(value)
        guard name == "hci-user", let rest, rest.contains("/") else { return try source(for: value).map { [$0] } ?? [] }
        var groups: [RealControllerBackend.Source] = []
        for (k, group) in rest.split(separator: "/", omittingEmptySubsequences: false).enumerated() {
            guard !group.isEmpty else {
                throw TransportValueError(value: value, reason: "group \(k + 1) is empty: groups of controllers are separated by one '/', as in \(name):0,1/2,3")
            }
            do {
                if let source = try source(for: "\(name):\(group)") { groups.append(source) }
            } catch let error as TransportValueError {
                throw TransportValueError(value: value, reason: "group \(k + 1): \(error.reason)")
            }
        }
        return groups
    }

    /// The external source a value names; nil for `sim` and unknown values.
    public static func source(for value: String) throws -> RealControllerBackend.Source? {
        let (name, rest) = split(value)
        func invalid(_ reason: String) -> TransportValueError { TransportValueError(value: value, reason: reason) }
        switch name {
        case "rootcanal":
            guard let rest else { return .rootCanal(nil) }
            do {
                let endpoint = try SocketEndpoint(parsing: rest)
                guard case .tcp = endpoint else { throw invalid("RootCanal serves TCP: write rootcanal:HOST:PORT, as in rootcanal:127.0.0.1:6402") }
                return .rootCanal(endpoint)
            } catch let error as SocketEndpointError {
                throw invalid("\(error.reason); write rootcanal:HOST:PORT, as in rootcanal:127.0.0.1:6402")
            }
        case "bumble":
            switch rest {
            case nil, "tcp"?: return .bumble(unixSockets: false)
            case "unix"?: return .bumble(unixSockets: true)
            case let other?: throw invalid("bumble takes no address ('\(other)'): blelab starts the controllers; write bumble or bumble:unix")
            }
        case "h4":
            guard let rest, !rest.isEmpty else { throw invalid("h4 needs endpoints, one per device: h4:tcp:127.0.0.1:9000,unix:/tmp/c1.sock") }
            var endpoints: [SocketEndpoint] = []
            for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
                do { endpoints.append(try SocketEndpoint(parsing: String(part))) } catch let error as SocketEndpointError {
                    throw invalid("endpoint \(endpoints.count + 1): \(error)")
                }
            }
            return .endpoints(endpoints)
        case "hci-user":
            guard let rest, !rest.isEmpty else { throw invalid("hci-user needs controller numbers, one per device: hci-user:0,1") }
            var devices: [UInt16] = []
            for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = part.hasPrefix("hci") ? part.dropFirst(3) : part[...]
                guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt16(digits) else {
                    throw invalid("'\(part)' is not a controller number (0 for hci0)")
                }
                devices.append(n)
            }
            return .userChannel(devices)
        default:
            return nil
        }
    }

    /// "h4:tcp:1.2.3.4:5" → ("h4", "tcp:1.2.3.4:5"); "bumble" → ("bumble", nil).
    private static func split(_ value: String) -> (String, String?) {
        guard let colon = value.firstIndex(of: ":") else { return (value, nil) }
        return (String(value[..<colon]), String(value[value.index(after: colon)...]))
    }
}
