import BLERuntime
import Foundation

// iOS 13+ connection events, and the connect options beyond the alert keys:
// `CBConnectPeripheralOptionStartDelayKey` and iOS 17's `CBConnectPeripheralOptionEnableAutoReconnect`
// with `centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)`.

/// Seconds, as Apple's `CFAbsoluteTime` (CoreFoundation on Linux does not export it through
/// Foundation). The lab's timestamps are the lab's virtual time in seconds.
public typealias CFAbsoluteTime = Double

/// A number of seconds (an `NSNumber`, a `Double` or an `Int`) the system waits before it starts
/// the connection. In the lab: virtual time, after which the connect is pending as any other.
public let CBConnectPeripheralOptionStartDelayKey = "kCBConnectOptionStartDelay"
/// A Boolean value (iOS 17+): after the peripheral connects, the system reconnects it by itself
/// whenever the link drops, and reports the drop with
/// `centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting: true, error:)`.
public let CBConnectPeripheralOptionEnableAutoReconnect = "kCBConnectOptionEnableAutoReconnect"
/// Bridging classic Bluetooth profiles over an LE connection: accepted and ignored (no BR/EDR).
public let CBConnectPeripheralOptionEnableTransportBridgingKey = "kCBConnectOptionEnableTransportBridging"
/// Requiring ANCS on the connection: accepted and ignored (the lab's peripherals have no ANCS).
public let CBConnectPeripheralOptionRequiresANCS = "kCBConnectOptionRequiresANCS"
/// Access to media devices: accepted and ignored.
public let CBCentralManagerOptionDeviceAccessForMedia = "kCBInitOptionDeviceAccessForMedia"

/// A change to the connection state of a peer (`centralManager(_:connectionEventDidOccur:for:)`).
public enum CBConnectionEvent: Int, CustomStringConvertible {
    case peerDisconnected = 0
    case peerConnected = 1

    public var description: String { self == .peerConnected ? "peerConnected" : "peerDisconnected" }
}

/// What `registerForConnectionEvents(options:)` matches connections on.
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An array of `CBUUID`s: a connection matches when the peripheral offers any of them
    /// (advertised, or discovered on an earlier connection).
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// An array of `UUID`s: a connection matches when the peripheral's identifier is one of them.
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}

extension CBCentralManager {
    /// Asks for `centralManager(_:connectionEventDidOccur:for:)` on every connection and
    /// disconnection of this manager's device (in the lab, one manager is one phone) that matches
    /// `options`: a peripheral whose identifier is in `.peripheralUUIDs`, or that offers a
    /// service in `.serviceUUIDs` (either list matching is enough). Nil or empty options match
    /// every peripheral. Calling it again replaces the options.
    public func registerForConnectionEvents(options: [CBConnectionEventMatchingOption: Any]? = nil) {
        let held = labLock?.enter(); defer { held?.leave() }
        connectionEvents = ConnectionEventMatching(options)
    }

    /// Reports `event` for `peripheral` when it matches the registered options.
    func connectionEvent(_ event: CBConnectionEvent, for peripheral: CBPeripheral) {
        guard let matching = connectionEvents, matching.matches(peripheral) else { return }
        deliver { $0.centralManager(self, connectionEventDidOccur: event, for: peripheral) }
    }

    /// `centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)`, whose default
    /// implementation calls `centralManager(_:didDisconnectPeripheral:error:)`.
    func reportDisconnection(of peripheral: CBPeripheral, isReconnecting: Bool, error: Error?) {
        let timestamp = cbLab?.now.seconds ?? 0
        deliver { $0.centralManager(self, didDisconnectPeripheral: peripheral, timestamp: timestamp, isReconnecting: isReconnecting, error: error) }
    }

    /// The start delay a connect's options ask for, if any.
    static func startDelay(_ options: [String: Any]?) -> TimeSpan? {
        let value = options?[CBConnectPeripheralOptionStartDelayKey]
        let seconds: Double?
        if let number = value as? NSNumber { seconds = number.doubleValue } else if let double = value as? Double {
            seconds = double
        } else if let int = value as? Int { seconds = Double(int) } else { seconds = nil }
        guard let seconds, seconds > 0, seconds.isFinite else { return nil }
        return .seconds(seconds)
    }
}

/// The options of `registerForConnectionEvents(options:)`.
struct ConnectionEventMatching {
    let services: [CBUUID]?
    let identifiers: [UUID]?

    init(_ options: [CBConnectionEventMatchingOption: Any]?) {
        services = options?[.serviceUUIDs] as? [CBUUID]
        identifiers = options?[.peripheralUUIDs] as? [UUID]
    }

    func matches(_ peripheral: CBPeripheral) -> Bool {
        if services == nil && identifiers == nil { return true }
        if let identifiers, identifiers.contains(peripheral.identifier) { return true }
        if let services {
            let offered = Set((peripheral.services ?? []).map(\.uuid.bluetoothUUID) + peripheral.advertisedServices)
            if services.contains(where: { offered.contains($0.bluetoothUUID) }) { return true }
        }
        return false
    }
}
