import ATT
import BLERuntime
import BLEWire
import GATT
import HCI

/// An `expect:` step: what must have been observed. Observations about writes and notifications
/// come from the ATT PDUs that crossed the link.
public enum Expectation: Hashable {
    /// Found by the most recent scan.
    case discovered(String)
    /// Not found by the most recent scan.
    case notDiscovered(String)
    /// The most recent scan found exactly these of the scenario's peripherals and no other device:
    /// a scan hears only its own lab (`blelab run --jobs` on real controllers: docs/tiers.md).
    case onlyDiscovered([String])
    /// The central holds a live connection to it.
    case connected(String)
    /// Discovery found at least these services.
    case services([BluetoothUUID], peripheral: String)
    /// Discovery found the characteristic with exactly these properties.
    case characteristic(CharacteristicRef, properties: CharacteristicProperties, peripheral: String)
    /// The value returned by the last `read`.
    case value([UInt8])
    /// How the last `write` crossed the link.
    case writeSentAs(WriteMethod)
    /// The ATT error the last operation got.
    case error(ATTErrorCode)
    case peripheralReceived(PeripheralReceivedExpectation)
    case notification(NotificationExpectation)
    /// No notification or indication of the characteristic arrives for `duration`.
    case noNotification(peripheral: String, characteristic: CharacteristicRef, duration: TimeSpan)
    /// The connection to the peripheral ends within `within` (or has ended), with `reason` if given.
    case disconnected(peripheral: String, reason: HCIStatus?, within: TimeSpan)
    /// How the central met a flawed peripheral (malformed responses, ATT timeouts, Service Changed…).
    case flaw(FlawExpectation)
    /// About the link: its parameters, an ATT timeout (Faults.swift).
    case fault(FaultExpectation)
    /// The step right before was cut short by the link, or its connect failed
    /// (InterruptionExpectation.swift).
    case interruption(InterruptionExpectation)
    /// The RSSI the central measures for a peripheral: from the last scan, or on the link.
    case rssi(RSSIExpectation)
    /// Pairing and encryption (Security.swift).
    case security(SecurityExpectation)

    /// The default of every `within`.
    public static let defaultWithin = TimeSpan.seconds(1)

    public var peripheral: String? {
        switch self {
        case let .discovered(p), let .notDiscovered(p), let .connected(p): return p
        case let .services(_, p), let .characteristic(_, _, p): return p
        case let .peripheralReceived(e): return e.peripheral
        case let .notification(e): return e.peripheral
        case let .noNotification(p, _, _), let .disconnected(p, _, _): return p
        case let .fault(f): return f.peripheral
        case let .rssi(e): return e.peripheral
        case .value, .writeSentAs, .error, .onlyDiscovered: return nil
        case let .flaw(e): return e.peripheral
        case let .interruption(e): return e.peripheral
        case let .security(e): return e.peripheral
        }
    }

    /// The expectation in words, for failure reports.
    public var summary: String {
        switch self {
        case let .discovered(p): return "the last scan discovered \(p)"
        case let .notDiscovered(p): return "the last scan did not discover \(p)"
        case let .onlyDiscovered(list):
            return "the last scan discovered " + (list.isEmpty ? "nothing" : list.joined(separator: ", ") + " and nothing else")
        case let .connected(p): return "connected to \(p)"
        case let .services(list, p): return "\(p) has services \(list.map(\.description).joined(separator: ", "))"
        case let .characteristic(ref, properties, p): return "\(p) has characteristic \(ref) with properties \(properties)"
        case let .value(v): return "the last read returned \(ValueText.describe(v))"
        case let .writeSentAs(m): return "the last write crossed the link as a Write \(m == .request ? "Request" : "Command")"
        case let .error(code): return "the last operation got ATT error \(code)"
        case let .peripheralReceived(e): return e.summary
        case let .notification(e): return e.summary
        case let .noNotification(p, ref, duration): return "no notification of \(ref) from \(p) for \(duration)"
        case let .disconnected(p, reason, within):
            return "disconnected from \(p)\(reason.map { " with reason \($0)" } ?? "") within \(within)"
        case let .flaw(e): return e.summary
        case let .fault(f): return f.summary
        case let .interruption(e): return e.summary
        case let .rssi(e): return e.summary
        case let .security(e): return e.summary
        }
    }
}

/// `expect: { rssi: { peripheral: ID, at-least: dBm, at-most: dBm, from: scan|link } }`.
public struct RSSIExpectation: Hashable {
    public enum Source: String, Hashable, CaseIterable {
        /// The report of the most recent scan (its advertising report's RSSI).
        case scan
        /// HCI Read RSSI on the connection (Vol 4 Part E 7.5.4).
        case link
    }

    public var peripheral: String
    public var atLeast: Int8?
    public var atMost: Int8?
    /// Nil: the link when connected, else the last scan.
    public var source: Source?

    public init(peripheral: String, atLeast: Int8? = nil, atMost: Int8? = nil, source: Source? = nil) {
        self.peripheral = peripheral
        self.atLeast = atLeast
        self.atMost = atMost
        self.source = source
    }

    public var summary: String {
        var bounds: [String] = []
        if let atLeast { bounds.append("at least \(atLeast) dBm") }
        if let atMost { bounds.append("at most \(atMost) dBm") }
        let from = source.map { $0 == .scan ? " in the last scan" : " on the link" } ?? ""
        return "the RSSI of \(peripheral)\(from) \(bounds.joined(separator: " and "))"
    }

    public func holds(_ rssi: Int8) -> Bool {
        (atLeast.map { rssi >= $0 } ?? true) && (atMost.map { rssi <= $0 } ?? true)
    }
}

public struct PeripheralReceivedExpectation: Hashable {
    public var peripheral: String
    public var characteristic: CharacteristicRef
    /// Nil: any value.
    public var value: [UInt8]?
    /// Nil: either method.
    public var via: WriteMethod?
    public var within: TimeSpan

    public init(peripheral: String, characteristic: CharacteristicRef, value: [UInt8]? = nil, via: WriteMethod? = nil,
                within: TimeSpan = Expectation.defaultWithin) {
        self.peripheral = peripheral
        self.characteristic = characteristic
        self.value = value
        self.via = via
        self.within = within
    }

    public var summary: String {
        var s = "\(peripheral) received a write of \(characteristic)"
        if let value { s += " with value \(ValueText.describe(value))" }
        if let via { s += " via Write \(via == .request ? "Request" : "Command")" }
        return s + " within \(within)"
    }
}

public struct NotificationExpectation: Hashable {
    public var peripheral: String
    public var characteristic: CharacteristicRef
    /// The value of the last notification counted.
    public var value: [UInt8]?
    /// How many must arrive (exactly) since the previous expectation on the characteristic;
    /// nil: `inOrder.count`, else at least one.
    public var count: Int?
    public var within: TimeSpan
    /// The values, in order, of the notifications counted.
    public var inOrder: [[UInt8]]?

    public init(peripheral: String, characteristic: CharacteristicRef, value: [UInt8]? = nil, count: Int? = nil,
                within: TimeSpan = Expectation.defaultWithin, inOrder: [[UInt8]]? = nil) {
        self.peripheral = peripheral
        self.characteristic = characteristic
        self.value = value
        self.count = count
        self.within = within
        self.inOrder = inOrder
    }

    /// How many notifications the expectation waits for, and whether that number is exact.
    public var awaited: (count: Int, exact: Bool) {
        if let count { return (count, true) }
        if let inOrder { return (inOrder.count, true) }
        return (1, false)
    }

    public var summary: String {
        let (n, exact) = awaited
        var s = exact ? "\(n) notification\(n == 1 ? "" : "s") of \(characteristic) from \(peripheral)"
                      : "a notification of \(characteristic) from \(peripheral)"
        if let value { s += ", the last with value \(ValueText.describe(value))" }
        if let inOrder { s += ", in order \(inOrder.map(ValueText.describe).joined(separator: ", "))" }
        return s + " within \(within)"
    }
}

/// Values in reports, as a scenario file would write them: one octet as `u8:100` (with its
/// character when printable: `u8:100 (text:d)`); printable
/// UTF-8 as `text:hello` or `"text:IOS_TEST\n"` (quoted when it needs escapes or has spaces);
/// anything else as `hex:0a1b`.
public enum ValueText {
    public static func describe(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "(empty)" }
        if bytes.count == 1 {
            let b = bytes[0]
            let printable = (0x21...0x7E).contains(b) && b != 0x22 && b != 0x5C
            return printable ? "u8:\(b) (text:\(Character(Unicode.Scalar(b))))" : "u8:\(b)"
        }
        if let text = String(validating: bytes, as: UTF8.self),
           text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F || $0 == "\n" || $0 == "\r" || $0 == "\t" }) {
            var escaped = ""
            for c in text.unicodeScalars {
                switch c {
                case "\\": escaped += "\\\\"
                case "\"": escaped += "\\\""
                case "\n": escaped += "\\n"
                case "\r": escaped += "\\r"
                case "\t": escaped += "\\t"
                default: escaped.unicodeScalars.append(c)
                }
            }
            let plain = escaped == text && !text.contains(" ") && !text.contains("#") && !text.contains(",")
            return plain ? "text:\(text)" : "\"text:\(escaped)\""
        }
        return "hex:" + bytes.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined()
    }
}
