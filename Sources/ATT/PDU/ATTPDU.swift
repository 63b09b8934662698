import BLEWire

/// Any ATT PDU (Core 5.4, Vol 3, Part F, 3.4). Decoding never fails on an opcode it does not know:
/// such a PDU becomes `.unknown`, so a bearer can answer Request Not Supported or ignore a command
/// (Part F, 3.3). It fails, with a `DecodeError` saying where, on a known PDU with bad lengths.
public enum ATTPDU: Hashable, Sendable, CustomStringConvertible {
    case errorResponse(ATTErrorResponse)
    case exchangeMTURequest(ATTExchangeMTURequest)
    case exchangeMTUResponse(ATTExchangeMTUResponse)
    case findInformationRequest(ATTFindInformationRequest)
    case findInformationResponse(ATTFindInformationResponse)
    case findByTypeValueRequest(ATTFindByTypeValueRequest)
    case findByTypeValueResponse(ATTFindByTypeValueResponse)
    case readByTypeRequest(ATTReadByTypeRequest)
    case readByTypeResponse(ATTReadByTypeResponse)
    case readRequest(ATTReadRequest)
    case readResponse(ATTReadResponse)
    case readBlobRequest(ATTReadBlobRequest)
    case readBlobResponse(ATTReadBlobResponse)
    case readMultipleRequest(ATTReadMultipleRequest)
    case readMultipleResponse(ATTReadMultipleResponse)
    case readByGroupTypeRequest(ATTReadByGroupTypeRequest)
    case readByGroupTypeResponse(ATTReadByGroupTypeResponse)
    case writeRequest(ATTWriteRequest)
    case writeResponse(ATTWriteResponse)
    case writeCommand(ATTWriteCommand)
    case signedWriteCommand(ATTSignedWriteCommand)
    case prepareWriteRequest(ATTPrepareWriteRequest)
    case prepareWriteResponse(ATTPrepareWriteResponse)
    case executeWriteRequest(ATTExecuteWriteRequest)
    case executeWriteResponse(ATTExecuteWriteResponse)
    case handleValueNotification(ATTHandleValueNotification)
    case handleValueIndication(ATTHandleValueIndication)
    case handleValueConfirmation(ATTHandleValueConfirmation)
    /// An opcode BLELab does not implement, with its parameters verbatim.
    case unknown(opcode: ATTOpcode, parameters: [UInt8])

    /// Decodes one whole ATT PDU (an L2CAP payload on channel 0x0004).
    public init(decoding bytes: [UInt8]) throws {
        guard let first = bytes.first else { throw DecodeError.truncated(needed: 1, available: 0, at: 0) }
        var r = ByteReader(bytes)
        switch ATTOpcode(first) {
        case .errorResponse: self = .errorResponse(try ATTErrorResponse(from: &r))
        case .exchangeMTURequest: self = .exchangeMTURequest(try ATTExchangeMTURequest(from: &r))
        case .exchangeMTUResponse: self = .exchangeMTUResponse(try ATTExchangeMTUResponse(from: &r))
        case .findInformationRequest: self = .findInformationRequest(try ATTFindInformationRequest(from: &r))
        case .findInformationResponse: self = .findInformationResponse(try ATTFindInformationResponse(from: &r))
        case .findByTypeValueRequest: self = .findByTypeValueRequest(try ATTFindByTypeValueRequest(from: &r))
        case .findByTypeValueResponse: self = .findByTypeValueResponse(try ATTFindByTypeValueResponse(from: &r))
        case .readByTypeRequest: self = .readByTypeRequest(try ATTReadByTypeRequest(from: &r))
        case .readByTypeResponse: self = .readByTypeResponse(try ATTReadByTypeResponse(from: &r))
        case .readRequest: self = .readRequest(try ATTReadRequest(from: &r))
        case .readResponse: self = .readResponse(try ATTReadResponse(from: &r))
        case .readBlobRequest: self = .readBlobRequest(try ATTReadBlobRequest(from: &r))
        case .readBlobResponse: self = .readBlobResponse(try ATTReadBlobResponse(from: &r))
        case .readMultipleRequest: self = .readMultipleRequest(try ATTReadMultipleRequest(from: &r))
        case .readMultipleResponse: self = .readMultipleResponse(try ATTReadMultipleResponse(from: &r))
        case .readByGroupTypeRequest: self = .readByGroupTypeRequest(try ATTReadByGroupTypeRequest(from: &r))
        case .readByGroupTypeResponse: self = .readByGroupTypeResponse(try ATTReadByGroupTypeResponse(from: &r))
        case .writeRequest: self = .writeRequest(try ATTWriteRequest(from: &r))
        case .writeResponse: self = .writeResponse(try ATTWriteResponse(from: &r))
        case .writeCommand: self = .writeCommand(try ATTWriteCommand(from: &r))
        case .signedWriteCommand: self = .signedWriteCommand(try ATTSignedWriteCommand(from: &r))
        case .prepareWriteRequest: self = .prepareWriteRequest(try ATTPrepareWriteRequest(from: &r))
        case .prepareWriteResponse: self = .prepareWriteResponse(try ATTPrepareWriteResponse(from: &r))
        case .executeWriteRequest: self = .executeWriteRequest(try ATTExecuteWriteRequest(from: &r))
        case .executeWriteResponse: self = .executeWriteResponse(try ATTExecuteWriteResponse(from: &r))
        case .handleValueNotification: self = .handleValueNotification(try ATTHandleValueNotification(from: &r))
        case .handleValueIndication: self = .handleValueIndication(try ATTHandleValueIndication(from: &r))
        case .handleValueConfirmation: self = .handleValueConfirmation(try ATTHandleValueConfirmation(from: &r))
        default:
            self = .unknown(opcode: ATTOpcode(first), parameters: Array(bytes.dropFirst()))
            return
        }
        try r.expectEnd()
    }

    /// The PDU's octets, opcode first.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 32)
        encode(into: &w)
        return w.bytes
    }

    public func encode(into w: inout ByteWriter) {
        switch self {
        case let .errorResponse(p): p.encode(into: &w)
        case let .exchangeMTURequest(p): p.encode(into: &w)
        case let .exchangeMTUResponse(p): p.encode(into: &w)
        case let .findInformationRequest(p): p.encode(into: &w)
        case let .findInformationResponse(p): p.encode(into: &w)
        case let .findByTypeValueRequest(p): p.encode(into: &w)
        case let .findByTypeValueResponse(p): p.encode(into: &w)
        case let .readByTypeRequest(p): p.encode(into: &w)
        case let .readByTypeResponse(p): p.encode(into: &w)
        case let .readRequest(p): p.encode(into: &w)
        case let .readResponse(p): p.encode(into: &w)
        case let .readBlobRequest(p): p.encode(into: &w)
        case let .readBlobResponse(p): p.encode(into: &w)
        case let .readMultipleRequest(p): p.encode(into: &w)
        case let .readMultipleResponse(p): p.encode(into: &w)
        case let .readByGroupTypeRequest(p): p.encode(into: &w)
        case let .readByGroupTypeResponse(p): p.encode(into: &w)
        case let .writeRequest(p): p.encode(into: &w)
        case let .writeResponse(p): p.encode(into: &w)
        case let .writeCommand(p): p.encode(into: &w)
        case let .signedWriteCommand(p): p.encode(into: &w)
        case let .prepareWriteRequest(p): p.encode(into: &w)
        case let .prepareWriteResponse(p): p.encode(into: &w)
        case let .executeWriteRequest(p): p.encode(into: &w)
        case let .executeWriteResponse(p): p.encode(into: &w)
        case let .handleValueNotification(p): p.encode(into: &w)
        case let .handleValueIndication(p): p.encode(into: &w)
        case let .handleValueConfirmation(p): p.encode(into: &w)
        case let .unknown(opcode, parameters):
            w.write(opcode.rawValue)
            w.write(bytes: parameters)
        }
    }

    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: return .errorResponse
        case .exchangeMTURequest: return .exchangeMTURequest
        case .exchangeMTUResponse: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationRequest
        case .findInformationResponse: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueRequest
        case .findByTypeValueResponse: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeRequest
        case .readByTypeResponse: return .readByTypeResponse
        case .readRequest: return .readRequest
        case .readResponse: return .readResponse
        case .readBlobRequest: return .readBlobRequest
        case .readBlobResponse: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleRequest
        case .readMultipleResponse: return .readMultipleResponse
        case .readByGroupTypeRequest: return .readByGroupTypeRequest
        case .readByGroupTypeResponse: return .readByGroupTypeResponse
        case .writeRequest: return .writeRequest
        case .writeResponse: return .writeResponse
        case .writeCommand: return .writeCommand
        case .signedWriteCommand: return .signedWriteCommand
        case .prepareWriteRequest: return .prepareWriteRequest
        case .prepareWriteResponse: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteRequest
        case .executeWriteResponse: return .executeWriteResponse
        case .handleValueNotification: return .handleValueNotification
        case .handleValueIndication: return .handleValueIndication
        case .handleValueConfirmation: return .handleValueConfirmation
        case let .unknown(opcode, _): return opcode
        }
    }

    /// In spec terms, e.g. "Write Request handle 0x0010 value 72 65 71".
    public var description: String {
        switch self {
        case let .errorResponse(p): return p.description
        case let .exchangeMTURequest(p): return p.description
        case let .exchangeMTUResponse(p): return p.description
        case let .findInformationRequest(p): return p.description
        case let .findInformationResponse(p): return p.description
        case let .findByTypeValueRequest(p): return p.description
        case let .findByTypeValueResponse(p): return p.description
        case let .readByTypeRequest(p): return p.description
        case let .readByTypeResponse(p): return p.description
        case let .readRequest(p): return p.description
        case let .readResponse(p): return p.description
        case let .readBlobRequest(p): return p.description
        case let .readBlobResponse(p): return p.description
        case let .readMultipleRequest(p): return p.description
        case let .readMultipleResponse(p): return p.description
        case let .readByGroupTypeRequest(p): return p.description
        case let .readByGroupTypeResponse(p): return p.description
        case let .writeRequest(p): return p.description
        case let .writeResponse(p): return p.description
        case let .writeCommand(p): return p.description
        case let .signedWriteCommand(p): return p.description
        case let .prepareWriteRequest(p): return p.description
        case let .prepareWriteResponse(p): return p.description
        case let .executeWriteRequest(p): return p.description
        case let .executeWriteResponse(p): return p.description
        case let .handleValueNotification(p): return p.description
        case let .handleValueIndication(p): return p.description
        case let .handleValueConfirmation(p): return p.description
        case let .unknown(opcode, parameters): return "\(opcode.name) parameters \(describeValue(parameters))"
        }
    }

    /// Describes raw octets from the wire: the decoded PDU, or why it does not decode.
    public static func describe(_ bytes: [UInt8]) -> String {
        do { return try ATTPDU(decoding: bytes).description } catch {
            return "malformed ATT PDU \(describeValue(bytes)) (\(error))"
        }
    }
}
