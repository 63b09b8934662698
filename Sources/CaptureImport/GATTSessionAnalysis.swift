import ATT
import BLEWire

/// A peripheral's GATT database as the central discovered it (Core 5.4, Vol 3, Part G, 4.4–4.7):
/// what the capture shows, with the peripheral's handles.
public struct DiscoveredDatabase: Hashable, Sendable {
    public struct Service: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var start: UInt16
        public var end: UInt16
        public var characteristics: [Characteristic]
    }

    public struct Characteristic: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var declarationHandle: UInt16
        public var valueHandle: UInt16
        /// The declaration's Characteristic Properties octet (Part G, 3.3.1.1).
        public var properties: UInt8
        public var descriptors: [Descriptor]
    }

    public struct Descriptor: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var handle: UInt16
    }

    public var services: [Service] = []

    /// The characteristic whose value handle is `handle`.
    public func characteristic(valueHandle handle: UInt16) -> (service: Service, characteristic: Characteristic)? {
        for s in services { for c in s.characteristics where c.valueHandle == handle { return (s, c) } }
        return nil
    }

    /// The characteristic whose Client Characteristic Configuration descriptor is at `handle`.
    public func characteristic(configurationHandle handle: UInt16) -> (service: Service, characteristic: Characteristic)? {
        for s in services {
            for c in s.characteristics where c.descriptors.contains(where: { $0.handle == handle && $0.uuid == .clientCharacteristicConfiguration }) {
                return (s, c)
            }
        }
        return nil
    }

    mutating func addService(_ uuid: BluetoothUUID, start: UInt16, end: UInt16) {
        guard !services.contains(where: { $0.start == start }) else { return }
        services.append(Service(uuid: uuid, start: start, end: end, characteristics: []))
        services.sort { $0.start < $1.start }
    }

    mutating func addCharacteristic(declaration: UInt16, value: [UInt8]) {
        // Characteristic declaration value (Part G, 3.3.1): Properties (1), Value Handle (2), UUID (2 or 16).
        guard value.count == 5 || value.count == 19 else { return }
        var r = ByteReader(value)
        guard let properties = try? r.readUInt8(), let valueHandle = try? r.readUInt16LE(),
              let uuid = try? r.readUUID(width: value.count - 3) else { return }
        guard let s = services.firstIndex(where: { $0.start <= declaration && declaration <= $0.end }),
              !services[s].characteristics.contains(where: { $0.declarationHandle == declaration }) else { return }
        services[s].characteristics.append(Characteristic(uuid: uuid, declarationHandle: declaration, valueHandle: valueHandle,
                                                          properties: properties, descriptors: []))
        services[s].characteristics.sort { $0.declarationHandle < $1.declarationHandle }
    }

    mutating func addDescriptor(handle: UInt16, uuid: BluetoothUUID) {
        // Find Information may cover declarations and values too (a client that asks for a whole
        // service's range): only what lies after a characteristic's value is a descriptor of it.
        if [BluetoothUUID.primaryService, .secondaryService, .include, .characteristic].contains(uuid) { return }
        guard let s = services.firstIndex(where: { $0.start <= handle && handle <= $0.end }),
              let c = services[s].characteristics.lastIndex(where: { $0.valueHandle < handle }) else { return }
        guard !services[s].characteristics[c].descriptors.contains(where: { $0.handle == handle }) else { return }
        services[s].characteristics[c].descriptors.append(Descriptor(uuid: uuid, handle: handle))
        services[s].characteristics[c].descriptors.sort { $0.handle < $1.handle }
    }
}

/// What the central did on a connection, in order, as the capture's ATT PDUs show it.
public struct GATTOperation: Sendable {
    public enum Kind: Sendable {
        /// Service discovery (all, or only these services) with characteristics and descriptors.
        case discover(all: Bool, services: [BluetoothUUID])
        /// More characteristics or descriptors found outside a service discovery (no step of its own).
        case discoverMore
        case mtu(client: UInt16, server: UInt16?)
        case read(handle: UInt16, value: [UInt8])
        case write(handle: UInt16, value: [UInt8], command: Bool)
        /// A Write Request to a Client Characteristic Configuration descriptor.
        case configure(handle: UInt16, value: [UInt8])
        /// Something the scenario format cannot express, with what it was.
        case unsupported(String)
    }

    public var kind: Kind
    public var start: CaptureMark
    /// When the answer came (equal to `start` for commands).
    public var end: CaptureMark
    /// The ATT error the operation got.
    public var error: ATTErrorCode?
    /// The request was never answered before the capture or the connection ended.
    public var unanswered = false
}

/// A notification or indication the peripheral sent.
public struct ValueNotification: Hashable, Sendable {
    public var mark: CaptureMark
    public var handle: UInt16
    public var value: [UInt8]
    public var indication: Bool
}

/// One connection's ATT traffic turned into the database, the central's operations and the
/// peripheral's notifications.
public struct GATTSession: Sendable {
    public var database = DiscoveredDatabase()
    public var operations: [GATTOperation] = []
    public var notifications: [ValueNotification] = []
    public var notes: [String] = []

    /// Reads `records` (one connection's ATT PDUs, in capture order). Never fails: a PDU that does
    /// not decode, or an answer to nothing, is noted and skipped.
    public static func analyse(_ records: [ATTRecord]) -> GATTSession {
        var session = GATTSession()
        var pending: (request: ATTPDU, mark: CaptureMark)?
        var discovery: Int?                // index of the discovery operation in progress
        var longRead: Int?                 // index of a read that Read Blob Requests continue
        var prepared: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
        var preparedStart: CaptureMark?

        func closeDiscovery() { discovery = nil }

        func discoveryStep(_ mark: CaptureMark, services: Bool, all: Bool, uuid: BluetoothUUID?) {
            if let i = discovery {
                if case let .discover(wasAll, list) = session.operations[i].kind {
                    let more = uuid.map { list.contains($0) ? [] : [$0] } ?? []
                    session.operations[i].kind = .discover(all: wasAll || all, services: list + more)
                } else if services {
                    session.operations[i].kind = .discover(all: all, services: uuid.map { [$0] } ?? [])
                }
                return
            }
            let kind: GATTOperation.Kind = services ? .discover(all: all, services: uuid.map { [$0] } ?? []) : .discoverMore
            session.operations.append(GATTOperation(kind: kind, start: mark, end: mark))
            discovery = session.operations.count - 1
        }

        for record in records {
            let pdu: ATTPDU
            do { pdu = try ATTPDU(decoding: record.bytes) } catch {
                session.notes.append("\(record.mark): a malformed ATT PDU from the \(record.fromCentral ? "central" : "peripheral") "
                                     + "(\(describe(record.bytes))) was skipped: \(error)")
                continue
            }
            if record.fromCentral {
                switch pdu.opcode.method {
                case .request:
                    if let p = pending {
                        // Listed once, by the scenario writer, as a step it cannot reproduce.
                        session.operations.append(GATTOperation(kind: .unsupported("\(p.request) (never answered)"), start: p.mark,
                                                                end: p.mark, unanswered: true))
                    }
                    pending = (pdu, record.mark)
                    switch pdu {
                    case let .readByGroupTypeRequest(r) where r.groupType == .primaryService:
                        discoveryStep(record.mark, services: true, all: true, uuid: nil)
                    case let .findByTypeValueRequest(r) where r.attributeType == .primaryService:
                        let uuid = try? { var rd = ByteReader(r.value); return try rd.readUUID(width: r.value.count) }()
                        discoveryStep(record.mark, services: true, all: false, uuid: uuid)
                    case let .readByTypeRequest(r) where r.attributeType == .characteristic || r.attributeType == .include:
                        discoveryStep(record.mark, services: false, all: false, uuid: nil)
                    case .findInformationRequest:
                        discoveryStep(record.mark, services: false, all: false, uuid: nil)
                    case let .readBlobRequest(r):
                        closeDiscovery()
                        if let i = longRead, case let .read(handle, value) = session.operations[i].kind, handle == r.handle,
                           Int(r.offset) == value.count {
                            // continues the read at `i`
                        } else {
                            longRead = nil
                        }
                    default:
                        closeDiscovery()
                        longRead = nil
                    }
                case .command:
                    closeDiscovery()
                    longRead = nil
                    switch pdu {
                    case let .writeCommand(w):
                        session.operations.append(GATTOperation(kind: .write(handle: w.handle, value: w.value, command: true),
                                                                start: record.mark, end: record.mark))
                    case let .signedWriteCommand(w):
                        session.operations.append(GATTOperation(kind: .unsupported("Signed Write Command to handle 0x\(hex(w.handle)) (signed writes need pairing)"),
                                                                start: record.mark, end: record.mark))
                    default:
                        session.operations.append(GATTOperation(kind: .unsupported("\(pdu.opcode.name)"), start: record.mark, end: record.mark))
                    }
                default:
                    break   // confirmations, and the central's own GATT server answering the peripheral
                }
                continue
            }
            // From the peripheral.
            switch pdu {
            case let .handleValueNotification(n):
                session.notifications.append(ValueNotification(mark: record.mark, handle: n.handle, value: n.value, indication: false))
                continue
            case let .handleValueIndication(n):
                session.notifications.append(ValueNotification(mark: record.mark, handle: n.handle, value: n.value, indication: true))
                continue
            default: break
            }
            guard pdu.opcode.method == .response else { continue }   // the peripheral's requests to the central's server
            guard let (request, start) = pending else {
                session.notes.append("\(record.mark): \(pdu.opcode.name) answered no request; skipped")
                continue
            }
            pending = nil
            var error: ATTErrorCode?
            if case let .errorResponse(e) = pdu {
                guard e.requestOpcode == request.opcode else {
                    session.notes.append("\(record.mark): an Error Response for \(e.requestOpcode.name) answered \(request.opcode.name)")
                    continue
                }
                error = e.error
            } else if request.opcode.responseOpcode != pdu.opcode {
                session.notes.append("\(record.mark): \(pdu.opcode.name) answered \(request.opcode.name); skipped")
                continue
            }
            let end = record.mark
            switch (request, pdu) {
            case let (.readByGroupTypeRequest(r), .readByGroupTypeResponse(resp)) where r.groupType == .primaryService:
                for e in resp.entries where e.value.count == 2 || e.value.count == 16 {
                    var rd = ByteReader(e.value)
                    if let uuid = try? rd.readUUID(width: e.value.count) {
                        session.database.addService(uuid, start: e.handle, end: e.endGroupHandle)
                    }
                }
            case let (.findByTypeValueRequest(r), .findByTypeValueResponse(resp)) where r.attributeType == .primaryService:
                var rd = ByteReader(r.value)
                if let uuid = try? rd.readUUID(width: r.value.count) {
                    for range in resp.handles { session.database.addService(uuid, start: range.start, end: range.end) }
                }
            case let (.readByTypeRequest(r), .readByTypeResponse(resp)) where r.attributeType == .characteristic:
                for e in resp.entries { session.database.addCharacteristic(declaration: e.handle, value: e.value) }
            case let (.findInformationRequest, .findInformationResponse(resp)):
                for e in resp.entries { session.database.addDescriptor(handle: e.handle, uuid: e.uuid) }
            case (.exchangeMTURequest(let r), _):
                var server: UInt16?
                if case let .exchangeMTUResponse(resp) = pdu { server = resp.serverRxMTU }
                session.operations.append(GATTOperation(kind: .mtu(client: r.clientRxMTU, server: server), start: start, end: end, error: error))
            case (.readRequest(let r), _):
                var value: [UInt8] = []
                if case let .readResponse(resp) = pdu { value = resp.value }
                session.operations.append(GATTOperation(kind: .read(handle: r.handle, value: value), start: start, end: end, error: error))
                longRead = error == nil ? session.operations.count - 1 : nil
            case (.readBlobRequest(let r), _):
                if let i = longRead, case let .read(handle, value) = session.operations[i].kind, handle == r.handle {
                    if case let .readBlobResponse(resp) = pdu {
                        session.operations[i].kind = .read(handle: handle, value: value + resp.partValue)
                    } else if error != .attributeNotLong && error != .invalidOffset {
                        session.operations[i].error = error
                    }
                    session.operations[i].end = end
                } else {
                    session.operations.append(GATTOperation(kind: .unsupported("Read Blob Request handle 0x\(hex(r.handle)) offset \(r.offset) without a Read Request before it"),
                                                            start: start, end: end, error: error))
                }
            case (.readByTypeRequest(let r), _) where r.attributeType != .characteristic && r.attributeType != .include:
                // Read Using Characteristic UUID (Part G, 4.8.2).
                if case let .readByTypeResponse(resp) = pdu, let first = resp.entries.first {
                    session.operations.append(GATTOperation(kind: .read(handle: first.handle, value: first.value), start: start, end: end))
                } else {
                    session.operations.append(GATTOperation(kind: .unsupported("Read By Type Request for \(r.attributeType) in \(r.range)"),
                                                            start: start, end: end, error: error))
                }
            case (.writeRequest(let w), _):
                let isConfiguration = session.database.characteristic(configurationHandle: w.handle) != nil
                let kind: GATTOperation.Kind = isConfiguration ? .configure(handle: w.handle, value: w.value)
                    : .write(handle: w.handle, value: w.value, command: false)
                session.operations.append(GATTOperation(kind: kind, start: start, end: end, error: error))
            case (.prepareWriteRequest(let w), _):
                if prepared.isEmpty { preparedStart = start }
                if error == nil { prepared.append((w.handle, w.offset, w.partValue)) } else {
                    session.operations.append(GATTOperation(kind: .write(handle: w.handle, value: w.partValue, command: false),
                                                            start: preparedStart ?? start, end: end, error: error))
                    prepared = []
                }
            case (.executeWriteRequest(let x), _):
                if x.flags == .write, let first = prepared.first, prepared.allSatisfy({ $0.handle == first.handle }) {
                    let value = prepared.sorted { $0.offset < $1.offset }.flatMap(\.value)
                    session.operations.append(GATTOperation(kind: .write(handle: first.handle, value: value, command: false),
                                                            start: preparedStart ?? start, end: end, error: error))
                } else if !prepared.isEmpty {
                    session.operations.append(GATTOperation(kind: .unsupported("a reliable or cancelled queued write of \(prepared.count) parts"),
                                                            start: preparedStart ?? start, end: end, error: error))
                }
                prepared = []
            case (.readByGroupTypeRequest, _), (.findByTypeValueRequest, _), (.readByTypeRequest, _), (.findInformationRequest, _):
                break   // discovery's ends (Attribute Not Found) and other answers
            default:
                session.operations.append(GATTOperation(kind: .unsupported("\(request.opcode.name)"), start: start, end: end, error: error))
            }
            if let i = discovery { session.operations[i].end = end }
        }
        if let p = pending {
            session.operations.append(GATTOperation(kind: .unsupported("\(p.request) (never answered)"), start: p.mark, end: p.mark,
                                                    unanswered: true))
        }
        return session
    }

    static func describe(_ bytes: [UInt8]) -> String {
        bytes.prefix(16).map { hex8($0) }.joined(separator: " ") + (bytes.count > 16 ? " …" : "")
    }
}

func hex(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, 4 - s.count)) + s
}

func hex8(_ v: UInt8) -> String {
    let s = String(v, radix: 16)
    return s.count == 1 ? "0" + s : s
}
