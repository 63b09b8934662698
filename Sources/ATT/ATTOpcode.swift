/// An Attribute Protocol opcode (Core 5.4, Vol 3, Part F, 3.3.1 and 3.4.8).
///
///     bit 7        bit 6         bits 5–0
///     | Auth Sig | Command Flag | Method |
///
/// Open, so that opcodes from a newer specification or a misbehaving peer survive decoding and
/// can be answered (Request Not Supported) or ignored (commands).
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8

    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    // Part F, 3.4.8, Table 3.37.
    public static let errorResponse = ATTOpcode(0x01)
    public static let exchangeMTURequest = ATTOpcode(0x02)
    public static let exchangeMTUResponse = ATTOpcode(0x03)
    public static let findInformationRequest = ATTOpcode(0x04)
    public static let findInformationResponse = ATTOpcode(0x05)
    public static let findByTypeValueRequest = ATTOpcode(0x06)
    public static let findByTypeValueResponse = ATTOpcode(0x07)
    public static let readByTypeRequest = ATTOpcode(0x08)
    public static let readByTypeResponse = ATTOpcode(0x09)
    public static let readRequest = ATTOpcode(0x0A)
    public static let readResponse = ATTOpcode(0x0B)
    public static let readBlobRequest = ATTOpcode(0x0C)
    public static let readBlobResponse = ATTOpcode(0x0D)
    public static let readMultipleRequest = ATTOpcode(0x0E)
    public static let readMultipleResponse = ATTOpcode(0x0F)
    public static let readByGroupTypeRequest = ATTOpcode(0x10)
    public static let readByGroupTypeResponse = ATTOpcode(0x11)
    public static let writeRequest = ATTOpcode(0x12)
    public static let writeResponse = ATTOpcode(0x13)
    public static let prepareWriteRequest = ATTOpcode(0x16)
    public static let prepareWriteResponse = ATTOpcode(0x17)
    public static let executeWriteRequest = ATTOpcode(0x18)
    public static let executeWriteResponse = ATTOpcode(0x19)
    public static let handleValueNotification = ATTOpcode(0x1B)
    public static let handleValueIndication = ATTOpcode(0x1D)
    public static let handleValueConfirmation = ATTOpcode(0x1E)
    /// Not implemented by BLELab; named so that they are classified correctly.
    public static let readMultipleVariableRequest = ATTOpcode(0x20)
    public static let readMultipleVariableResponse = ATTOpcode(0x21)
    public static let multipleHandleValueNotification = ATTOpcode(0x23)
    public static let writeCommand = ATTOpcode(0x52)
    public static let signedWriteCommand = ATTOpcode(0xD2)

    /// Bit 6, the Command Flag (Part F, 3.3.1). A server ignores a command it does not support.
    @inlinable public var isCommand: Bool { rawValue & 0x40 != 0 }

    /// Bit 7, the Authentication Signature Flag (Part F, 3.3.1).
    @inlinable public var hasAuthenticationSignature: Bool { rawValue & 0x80 != 0 }

    /// The role a PDU with this opcode plays (Part F, 3.3).
    public enum Method: Sendable, Equatable {
        case request, response, command, notification, indication, confirmation
    }

    /// How a PDU with this opcode is handled. An unknown opcode with the Command Flag set is a
    /// command; any other unknown opcode is treated as a request (and answered Request Not Supported).
    public var method: Method {
        switch rawValue {
        case 0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21: return .response
        case 0x1B, 0x23: return .notification
        case 0x1D: return .indication
        case 0x1E: return .confirmation
        default: return isCommand ? .command : .request
        }
    }

    /// Whether Core 5.4 defines this opcode (Part F, 3.4.8, Table 3.37), implemented by BLELab
    /// or not. Any other opcode is a protocol violation (`ATTProtocolViolation.unknownOpcode`).
    public var isDefined: Bool {
        switch rawValue {
        case 0x01...0x13, 0x16...0x19, 0x1B, 0x1D, 0x1E, 0x20, 0x21, 0x23, 0x52, 0xD2: return true
        default: return false
        }
    }

    /// For a request, the opcode of the response that answers it (Part F, 3.4.8).
    public var responseOpcode: ATTOpcode? {
        switch rawValue {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20:
            return ATTOpcode(rawValue + 1)
        default: return nil
        }
    }

    /// The specification's name, e.g. "Write Request"; "Opcode 0xNN" when unknown.
    public var name: String {
        switch rawValue {
        case 0x01: return "Error Response"
        case 0x02: return "Exchange MTU Request"
        case 0x03: return "Exchange MTU Response"
        case 0x04: return "Find Information Request"
        case 0x05: return "Find Information Response"
        case 0x06: return "Find By Type Value Request"
        case 0x07: return "Find By Type Value Response"
        case 0x08: return "Read By Type Request"
        case 0x09: return "Read By Type Response"
        case 0x0A: return "Read Request"
        case 0x0B: return "Read Response"
        case 0x0C: return "Read Blob Request"
        case 0x0D: return "Read Blob Response"
        case 0x0E: return "Read Multiple Request"
        case 0x0F: return "Read Multiple Response"
        case 0x10: return "Read By Group Type Request"
        case 0x11: return "Read By Group Type Response"
        case 0x12: return "Write Request"
        case 0x13: return "Write Response"
        case 0x16: return "Prepare Write Request"
        case 0x17: return "Prepare Write Response"
        case 0x18: return "Execute Write Request"
        case 0x19: return "Execute Write Response"
        case 0x1B: return "Handle Value Notification"
        case 0x1D: return "Handle Value Indication"
        case 0x1E: return "Handle Value Confirmation"
        case 0x20: return "Read Multiple Variable Request"
        case 0x21: return "Read Multiple Variable Response"
        case 0x23: return "Multiple Handle Value Notification"
        case 0x52: return "Write Command"
        case 0xD2: return "Signed Write Command"
        default: return "Opcode " + hex2(rawValue)
        }
    }

    public var description: String { name }
}

/// "0x0a"-style helpers shared by the ATT descriptions (no Foundation).
@usableFromInline let attHexDigits: [Character] = Array("0123456789abcdef")

@inlinable func hex2(_ v: UInt8) -> String {
    "0x" + String(attHexDigits[Int(v >> 4)]) + String(attHexDigits[Int(v & 0xF)])
}

@inlinable func hex4(_ v: UInt16) -> String {
    var s = "0x"
    for shift in stride(from: 12, through: 0, by: -4) { s.append(attHexDigits[Int((v >> UInt16(shift)) & 0xF)]) }
    return s
}
