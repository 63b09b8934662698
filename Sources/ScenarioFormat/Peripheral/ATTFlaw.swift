import ATT
import BLERuntime
import BLEWire

/// How a flawed peripheral answers some of the ATT requests it receives: with an error its
/// database would not give, late, never, or with a damaged PDU. The fault sits in the peripheral's
/// own server (its ATT bearer's server role), so what crosses the link is what such a device sends.
public struct ATTFlaw: Hashable, CustomStringConvertible {
    /// Which requests, by the names scenario files use (`read-by-group-type`), with their opcodes
    /// (Core 5.4, Vol 3, Part F, 3.4.8).
    public static let requestNames: [(name: String, opcode: ATTOpcode)] = [
        ("exchange-mtu", .exchangeMTURequest), ("find-information", .findInformationRequest),
        ("find-by-type-value", .findByTypeValueRequest), ("read-by-type", .readByTypeRequest), ("read", .readRequest),
        ("read-blob", .readBlobRequest), ("read-multiple", .readMultipleRequest), ("read-by-group-type", .readByGroupTypeRequest),
        ("write", .writeRequest), ("prepare-write", .prepareWriteRequest), ("execute-write", .executeWriteRequest),
    ]

    /// The scenario name of a request opcode (`read-by-group-type`), or its `0xNN` form.
    public static func requestName(_ opcode: ATTOpcode) -> String {
        requestNames.first { $0.opcode == opcode }?.name ?? "0x" + String(opcode.rawValue, radix: 16)
    }

    /// What goes back instead of the normal answer.
    public enum Answer: Hashable {
        /// The normal answer (with `delay`: late).
        case normal
        /// An Error Response with this code, about the request's (first) handle.
        case error(ATTErrorCode)
        /// Nothing, ever: the central's 30 s transaction timeout must fire (Part F, 3.3.3).
        case none
        case malformed(Malformation)
    }

    public enum Malformation: Hashable, CustomStringConvertible {
        /// The normal answer without its last octet.
        case truncated
        /// The normal answer's parameters under another response's opcode: Read Response (0x0B), or
        /// Read Blob Response (0x0D) when the request was a Read Request.
        case wrongOpcode
        /// An Error Response one octet short (no Error Code): 4 octets instead of 5 (Part F, 3.4.1.1).
        case badErrorLength
        /// Exactly these octets.
        case octets([UInt8])

        public var description: String {
            switch self {
            case .truncated: return "truncated"
            case .wrongOpcode: return "wrong-opcode"
            case .badErrorLength: return "bad-error-length"
            case let .octets(o): return "hex:" + o.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            }
        }
    }

    /// Request opcodes it applies to; empty: every request.
    public var requests: [ATTOpcode]
    /// Only requests that touch this characteristic: a handle of its value or descriptors, or a
    /// handle range that overlaps its declaration to its last descriptor.
    public var characteristic: CharacteristicRef?
    /// Matching requests answered normally before the flaw starts.
    public var skip: Int
    /// How many matching requests get it (after `skip`); nil: every one.
    public var count: Int?
    /// How long the answer waits (virtual time).
    public var delay: TimeSpan
    public var answer: Answer

    public init(requests: [ATTOpcode] = [], characteristic: CharacteristicRef? = nil, skip: Int = 0, count: Int? = nil,
                delay: TimeSpan = .zero, answer: Answer) {
        self.requests = requests
        self.characteristic = characteristic
        self.skip = skip
        self.count = count
        self.delay = delay
        self.answer = answer
    }

    public var description: String {
        var parts: [String] = [requests.isEmpty ? "any request" : requests.map(Self.requestName).joined(separator: "/")]
        if let characteristic { parts.append("of \(characteristic)") }
        switch answer {
        case .normal: parts.append("answered normally")
        case let .error(code): parts.append("answered \(code.name)")
        case .none: parts.append("left unanswered")
        case let .malformed(m): parts.append("answered malformed (\(m))")
        }
        if delay > .zero { parts.append("after \(delay)") }
        return parts.joined(separator: " ")
    }
}

/// `0x000c`, as reports write handles.
func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
}
