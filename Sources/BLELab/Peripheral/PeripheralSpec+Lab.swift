import ATT
import GAP
import GATT
import ScenarioFormat

// What the lab makes of the scenario format's peripheral descriptions (ScenarioFormat/Peripheral):
// the HCI advertising configuration, the GATT database entries, and how a flawed peripheral's
// answers are damaged.

extension AdvertisingSpec {
    /// The HCI-level configuration: encoded AD structures, interval, connectability.
    public var configuration: AdvertisingConfiguration {
        AdvertisingConfiguration(data: content.data, scanResponse: scanResponse?.data, interval: interval, connectable: connectable)
    }
}

extension ATTFlaw {
    /// The octets a damaged answer goes out as.
    func damage(_ octets: [UInt8], request: ATTOpcode) -> [UInt8] {
        switch answer {
        case let .malformed(m):
            switch m {
            case .truncated: return Array(octets.dropLast())
            case .wrongOpcode:
                guard !octets.isEmpty else { return octets }
                var damaged = octets
                damaged[0] = request == .readRequest ? ATTOpcode.readBlobResponse.rawValue : ATTOpcode.readResponse.rawValue
                return damaged
            case .badErrorLength, .octets: return octets
            }
        default:
            return octets
        }
    }

    /// The handle an Error Response to `pdu` names (Part F, 3.4.1.1): the request's handle, the
    /// start of its range, the first of its handles; 0x0000 when it has none.
    static func handleInError(_ pdu: ATTPDU) -> UInt16 {
        switch pdu {
        case let .readRequest(r): return r.handle
        case let .readBlobRequest(r): return r.handle
        case let .writeRequest(r): return r.handle
        case let .prepareWriteRequest(r): return r.handle
        case let .readByTypeRequest(r): return r.range.start
        case let .readByGroupTypeRequest(r): return r.range.start
        case let .findInformationRequest(r): return r.range.start
        case let .findByTypeValueRequest(r): return r.range.start
        case let .readMultipleRequest(r): return r.handles.first ?? 0
        default: return 0
        }
    }

    /// Whether `pdu` touches the attributes `first...last` (a characteristic's declaration to its
    /// last descriptor).
    static func touches(_ pdu: ATTPDU, _ first: UInt16, _ last: UInt16) -> Bool {
        func inside(_ h: UInt16) -> Bool { first < h && h <= last }
        func overlaps(_ r: ATTHandleRange) -> Bool { r.start <= last && first <= r.end }
        switch pdu {
        case let .readRequest(r): return inside(r.handle)
        case let .readBlobRequest(r): return inside(r.handle)
        case let .writeRequest(r): return inside(r.handle)
        case let .prepareWriteRequest(r): return inside(r.handle)
        case let .readMultipleRequest(r): return r.handles.contains(where: inside)
        case let .readByTypeRequest(r): return overlaps(r.range)
        case let .readByGroupTypeRequest(r): return overlaps(r.range)
        case let .findInformationRequest(r): return overlaps(r.range)
        case let .findByTypeValueRequest(r): return overlaps(r.range)
        default: return false
        }
    }
}

/// `0x000c`, as reports write handles.
func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
}
