import ATT
import BLERuntime
import BLEWire
import HCI

/// Which characteristic an action means: `2A19`, or `180F/2A19` when the UUID appears in more
/// than one service.
public struct CharacteristicRef: Hashable, CustomStringConvertible {
    public var service: BluetoothUUID?
    public var characteristic: BluetoothUUID

    public init(_ characteristic: BluetoothUUID, in service: BluetoothUUID? = nil) {
        self.characteristic = characteristic
        self.service = service
    }

    /// Parses `2A19` or `180F/2A19`.
    public init?(string: String) {
        let parts = string.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            guard let c = BluetoothUUID(string: string) else { return nil }
            self.init(c)
        case 2:
            guard let s = BluetoothUUID(string: String(parts[0])), let c = BluetoothUUID(string: String(parts[1])) else { return nil }
            self.init(c, in: s)
        default:
            return nil
        }
    }

    public var description: String { service.map { "\($0)/\(characteristic)" } ?? characteristic.description }
}

/// Bytes an action sends or stores, resolved when the action runs.
public indirect enum ValueSource: Hashable, CustomStringConvertible {
    case bytes([UInt8])
    /// The bytes just written (in an `on-write` trigger).
    case written
    /// One octet drawn uniformly from the range with the peripheral's seeded generator.
    case randomU8(ClosedRange<UInt8>)
    /// One octet: `start`, then `start + 1`… (wrapping), one step per use of this action.
    case counterU8(start: UInt8)
    /// Each use takes the next element, cycling.
    case sequence([[UInt8]])
    /// The parts resolved and concatenated, e.g. flags 0x00 then a random heart rate.
    case concatenation([ValueSource])

    public var description: String {
        switch self {
        case let .bytes(b): return "hex:\(b.hexString)"
        case .written: return "written"
        case let .randomU8(r): return "{ random-u8: [\(r.lowerBound), \(r.upperBound)] }"
        case let .counterU8(start): return "{ counter-u8: \(start) }"
        case let .sequence(list): return "{ sequence: [\(list.map { "hex:\($0.hexString)" }.joined(separator: ", "))] }"
        case let .concatenation(parts): return "[\(parts.map(\.description).joined(separator: ", "))]"
        }
    }

    /// Whether resolving it needs a write in progress.
    public var needsWrittenValue: Bool {
        switch self {
        case .written: return true
        case let .concatenation(parts): return parts.contains { $0.needsWrittenValue }
        default: return false
        }
    }
}

/// Something a simulated peripheral does: in a trigger (`on-write`, `on-connect`…) or when a
/// scenario step tells it to.
public enum PeripheralAction: Hashable, CustomStringConvertible {
    /// Handle Value Notification to every central that enabled it; nil value: the stored value.
    case notify(CharacteristicRef, ValueSource?)
    /// Handle Value Indication to every central that enabled it.
    case indicate(CharacteristicRef, ValueSource?)
    /// Notify every `interval`, `count` times (nil: until the lab stops). Starting it again for the
    /// same characteristic replaces the running one.
    case notifyEvery(CharacteristicRef, interval: TimeSpan, value: ValueSource?, count: Int?)
    /// Stop a running `notifyEvery`.
    case stopNotifying(CharacteristicRef)
    case setValue(CharacteristicRef, ValueSource)
    /// Answer the request being handled with this ATT error (in `on-read` / `on-write` only).
    case respondError(ATTErrorCode)
    /// Wait before the following actions (and before answering the request, if any).
    case delay(TimeSpan)
    /// Faults (BLELab's PeripheralFaultActions.swift runs them): the device powers off; it asks its
    /// centrals for new connection parameters; it sends `count` notifications at once.
    case powerOff
    case requestConnectionUpdate(ConnectionUpdateRequest)
    case burst(CharacteristicRef, value: ValueSource?, count: Int)
    /// Disconnect every central, telling them `reason` (default Remote User Terminated Connection).
    case disconnect(HCIStatus?)
    case stopAdvertising
    case startAdvertising
    /// A Handle Value Notification for any handle, whether it exists or a central enabled it: a
    /// flawed device's notification for a handle the central never discovered.
    case notifyHandle(UInt16, ValueSource)
    /// The same as an indication (the central must confirm it all the same, Part F, 3.4.7.2).
    case indicateHandle(UInt16, ValueSource)
    /// These octets as an ATT PDU on every connection, outside any transaction (a response with no
    /// request outstanding, an unknown opcode).
    case sendPDU([UInt8])
    /// Adds a service to the GATT database at run time, after the last handle.
    case addService(ServiceSpec)
    /// Removes the first service with this UUID from the GATT database; its handles stay unused.
    case removeService(BluetoothUUID)
    /// Indicates Service Changed (0x2A05, Core 5.4 Vol 3 Part G 7.1) to every central that enabled
    /// it, with this range; nil: the handles added or removed since the last Service Changed.
    case serviceChanged(ATTHandleRange?)
    /// Forgets every bond (a factory reset): a bonded central's next encryption fails with PIN or
    /// Key Missing (Vol 3 Part H 2.4.4.2; the LTK request is answered negatively).
    case forgetBonds

    public var description: String {
        switch self {
        case let .notify(c, v): return "notify \(c)\(v.map { " value \($0)" } ?? "")"
        case let .indicate(c, v): return "indicate \(c)\(v.map { " value \($0)" } ?? "")"
        case let .notifyEvery(c, interval, v, count):
            return "notify-every \(c) interval \(interval)\(v.map { " value \($0)" } ?? "")\(count.map { " count \($0)" } ?? "")"
        case let .stopNotifying(c): return "stop-notifying \(c)"
        case let .setValue(c, v): return "set-value \(c) \(v)"
        case let .respondError(code): return "respond-error \(code.name)"
        case let .delay(t): return "delay \(t)"
        case .powerOff, .requestConnectionUpdate, .burst: return faultDescription
        case let .disconnect(reason): return "disconnect\(reason.map { " reason \($0.name)" } ?? "")"
        case .stopAdvertising: return "stop-advertising"
        case .startAdvertising: return "start-advertising"
        case let .notifyHandle(h, v): return "notify-handle \(hex4(h)) value \(v)"
        case let .indicateHandle(h, v): return "indicate-handle \(hex4(h)) value \(v)"
        case let .sendPDU(o): return "send-pdu hex:\(o.hexString)"
        case let .addService(s): return "add-service \(s.uuid) [\(s.characteristics.map(\.uuid.description).joined(separator: ", "))]"
        case let .removeService(u): return "remove-service \(u)"
        case let .serviceChanged(r): return "service-changed" + (r.map { " \($0)" } ?? "")
        case .forgetBonds: return "forget-bonds"
        }
    }

    /// The characteristic the action names, if any.
    public var characteristic: CharacteristicRef? {
        switch self {
        case let .notify(c, _), let .indicate(c, _), let .notifyEvery(c, _, _, _), let .stopNotifying(c), let .setValue(c, _),
             let .burst(c, _, _):
            return c
        default:
            return nil
        }
    }
}
