import BLELab
import BLERuntime
import Transport

/// A device could not get a controller: which device, from where, and why.
public struct ControllerUnavailable: Error, CustomStringConvertible {
    public var device: String
    public var source: String
    public var reason: String

    public var description: String { "no controller for \(device) from \(source): \(reason)" }
}

/// Controllers over H4 sockets, one connection per lab device: device i connects to endpoint i,
/// or every device to one endpoint where each connection is a new controller (RootCanal's HCI
/// port). Needs the lab's loop to be a `SystemEventLoop`.
public final class SocketControllerConnector: ControllerConnector {
    public enum Plan: Equatable {
        /// Device i gets endpoints[i].
        case perDevice([SocketEndpoint])
        /// Every device connects to this endpoint (each connection a new controller).
        case shared(SocketEndpoint)
    }

    public let description: String
    public let plan: Plan
    public let connectTimeout: TimeSpan
    /// When a connection fails: why no controller can be had any more (the helper process
    /// died), or nil. Its answer replaces the socket's bare "connection refused".
    let health: () -> String?
    public private(set) var transports: [SocketH4Transport] = []

    public init(plan: Plan, description: String, connectTimeout: TimeSpan = .seconds(5), health: @escaping () -> String? = { nil }) {
        self.plan = plan
        self.description = description
        self.connectTimeout = connectTimeout
        self.health = health
    }

    public func endpoint(forDevice index: Int) -> SocketEndpoint? {
        switch plan {
        case let .shared(endpoint): return endpoint
        case let .perDevice(endpoints): return index < endpoints.count ? endpoints[index] : nil
        }
    }

    public func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport {
        guard let loop = loop as? SystemEventLoop else {
            throw ControllerUnavailable(device: name, source: description, reason: "socket transports need a SystemEventLoop")
        }
        if let dead = health() { throw ControllerUnavailable(device: name, source: description, reason: dead) }
        guard let endpoint = endpoint(forDevice: index) else {
            let given: Int
            if case let .perDevice(endpoints) = plan { given = endpoints.count } else { given = 1 }
            throw ControllerUnavailable(device: name, source: description,
                                        reason: "it is device \(index + 1), but only \(given) endpoint(s) were given (one per device, in order)")
        }
        waitForAcceptQueue(of: endpoint, on: loop)
        do {
            let transport = try SocketH4Transport.connect(to: endpoint, on: loop, timeout: connectTimeout)
            transports.append(transport)
            return transport
        } catch {
            throw ControllerUnavailable(device: name, source: description, reason: health() ?? "\(error)")
        }
    }

    public func closeAll() {
        for transport in transports { transport.close() }
        transports = []
    }

    /// Waits (at most 1 s) until the local listener at `endpoint` has accepted every connection
    /// made so far. RootCanal listens with a backlog of 1 and accepts on its own schedule: a
    /// connection made while two wait in its accept queue has its SYN dropped, and the kernel
    /// sends it again only after 1 s — a second of nothing in the middle of a lab's set-up
    /// (measured: 1 of 5 quick connections, most rounds). /proc/net/tcp shows the queue's length.
    func waitForAcceptQueue(of endpoint: SocketEndpoint, on loop: SystemEventLoop) {
        guard case let .tcp(host, port) = endpoint, ["127.0.0.1", "localhost", "::1"].contains(host) else { return }
        let empty = { (Listening.acceptQueueLength(port: port) ?? 0) == 0 }
        guard !empty() else { return }
        acceptQueueWaits += 1
        var ticking = true
        func tick() {
            guard ticking else { return }
            loop.schedule(after: .milliseconds(2)) { tick() }
        }
        tick()
        loop.run(until: loop.now + .seconds(1), orUntil: empty)
        ticking = false
    }

    /// How often a connection waited for the listener to accept the previous ones.
    public private(set) var acceptQueueWaits = 0
}

/// Linux controllers through the HCI user channel: device i of the lab gets hciN = devices[i].
public final class UserChannelConnector: ControllerConnector {
    public let devices: [UInt16]
    public private(set) var transports: [HCIUserChannelTransport] = []

    public init(devices: [UInt16]) { self.devices = devices }

    public var description: String { "HCI user channel on " + devices.map { "hci\($0)" }.joined(separator: ", ") }

    public func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport {
        guard let loop = loop as? SystemEventLoop else {
            throw ControllerUnavailable(device: name, source: description, reason: "the HCI user channel needs a SystemEventLoop")
        }
        guard index < devices.count else {
            throw ControllerUnavailable(device: name, source: description,
                                        reason: "it is device \(index + 1), but only \(devices.count) controller(s) were given (one per device, in order)")
        }
        do {
            let transport = try HCIUserChannelTransport(device: devices[index], loop: loop)
            transports.append(transport)
            return transport
        } catch {
            throw ControllerUnavailable(device: name, source: description, reason: "\(error)")
        }
    }

    public func closeAll() {
        for transport in transports { transport.close() }
        transports = []
    }
}
