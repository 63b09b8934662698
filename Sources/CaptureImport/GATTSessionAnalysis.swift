import ATT
import BLEWire

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
    /// The answer the central rejected (a response that does not decode, or not of the kind the
    /// request calls for, Core 5.4, Vol 3, Part F, 3.3.2): its octets. It ended the operation.
    public var rejected: [UInt8]?
    /// An ATT_MTU exchange the peripheral started (the central's GATT server answered it).
    public var askedByPeripheral = false
    /// For a discovery: the primary services it found, in handle order.
    public var found: [BluetoothUUID] = []
}

/// A notification or indication the peripheral sent.
public struct ValueNotification: Hashable, Sendable {
    public var mark: CaptureMark
    public var handle: UInt16
    public var value: [UInt8]
    public var indication: Bool
}

/// One request of the central and what became of it: the unit the peripheral's flaws act on
/// (docs/scenarios.md, Flawed peripherals).
public struct ATTExchange: Sendable {
    public enum Answer: Hashable, Sendable {
        /// The response the request calls for.
        case response
        case error(ATTErrorCode)
        /// A response the central rejected (does not decode, or of another kind): its octets.
        case rejected([UInt8])
        /// No answer before the capture or the connection ended.
        case none
    }

    public var request: ATTPDU
    /// When the request crossed the capturing host's HCI (sent by the central, or received by the peripheral).
    public var sent: CaptureMark
    public var answer: Answer = .none
    public var answered: CaptureMark?
    /// The operation it belongs to (index into `GATTSession.operations`).
    public var operation: Int?
    /// Part of the central's re-discovery after this Service Changed (index into `serviceChanges`).
    public var serviceChange: Int?
    /// The central sent another request before any answer came (which ATT forbids, Part F, 3.3.2).
    public var superseded = false
}

/// An ATT PDU from the peripheral outside any transaction that is neither a notification nor an
/// indication of a value: a response nobody asked for, a damaged notification, an unknown opcode.
public struct UnsolicitedPDU: Hashable, Sendable {
    public var mark: CaptureMark
    public var bytes: [UInt8]
}

/// A Service Changed indication (0x2A05 in service 0x1801, Core 5.4, Vol 3, Part G, 7.1) and
/// what the central's re-discovery of its range found.
public struct ServiceChange: Sendable {
    public var mark: CaptureMark
    public var start: UInt16
    public var end: UInt16
    /// What the central had discovered when the indication came.
    public var before: DiscoveredDatabase
    /// What the central's re-discovery found: the primary services declared in the range, with
    /// their characteristics and descriptors.
    public var found = DiscoveredDatabase()
    /// The central re-discovered the range (its requests follow the indication).
    public var rediscovered = false
    /// When the re-discovery's last answer came.
    public var rediscoveryEnd: CaptureMark?
}

/// One connection's ATT traffic turned into the database, the central's operations and the
/// peripheral's notifications.
public struct GATTSession: Sendable {
    public var database = DiscoveredDatabase()
    public var operations: [GATTOperation] = []
    public var notifications: [ValueNotification] = []
    /// Every request of the central, in order, with its answer.
    public var exchanges: [ATTExchange] = []
    public var unsolicited: [UnsolicitedPDU] = []
    public var serviceChanges: [ServiceChange] = []
    public var notes: [String] = []
    /// Handles of Client Characteristic Configuration descriptors the central wrote by handle,
    /// without discovering them (`inferUndiscovered`).
    public var cccds: Set<UInt16> = []
    /// On a connection the capture started inside: answers to requests sent before it.
    public var answersBeforeCapture = 0

    /// Whether `pdu` is one of the discovery requests (Part G, 4.4–4.7).
    static func isDiscovery(_ pdu: ATTPDU) -> Bool {
        switch pdu {
        case let .readByGroupTypeRequest(r): return r.groupType == .primaryService
        case let .findByTypeValueRequest(r): return r.attributeType == .primaryService
        case let .readByTypeRequest(r): return r.attributeType == .characteristic || r.attributeType == .include
        case .findInformationRequest: return true
        default: return false
        }
    }

    /// Reads `records` (one connection's ATT PDUs, in capture order). Never fails: a PDU that does
    /// not decode, or an answer to nothing, is kept for the scenario writer (a peripheral's damaged
    /// answer may be the very bug being imported) or noted.
    /// `resumed`: the capture started inside the connection, so answers may come to requests
    /// sent before it (`answersBeforeCapture`).
    public static func analyse(_ records: [ATTRecord], resumed: Bool = false) -> GATTSession {
        var session = GATTSession()
        var pending: Int?                  // index into exchanges of the outstanding request
        var discovery: Int?                // index of the discovery operation in progress
        var discoveryHasGroupType = false
        var discoveryHasContents = false
        var longRead: Int?                 // index of a read that Read Blob Requests continue
        var prepared: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
        var preparedStart: CaptureMark?
        var preparedExchanges: [Int] = []   // the Prepare Write Requests of the queued write in progress
        var rediscovery: Int?
        var rediscoveryStart: UInt16 = 0              // the Service Changed whose re-discovery is running
        var awaitingRediscovery: Int?      // a Service Changed whose re-discovery may start with the next request
        var peripheralMTURequest: (mark: CaptureMark, mtu: UInt16)?   // the peripheral's Exchange MTU Request, unanswered
        var harvested: [BluetoothUUID] = []    // services the answers to requests before the capture listed

        func closeDiscovery() {
            discovery = nil
            discoveryHasGroupType = false
            discoveryHasContents = false
        }

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

        func append(_ op: GATTOperation) -> Int {
            session.operations.append(op)
            return session.operations.count - 1
        }

        /// The operation a request starts or continues, for an answer that ends it abnormally
        /// (rejected, or never answered): the discovery it is part of, or a new operation.
        func operation(for x: Int, rejected: [UInt8]?, unanswered: Bool, at mark: CaptureMark) -> Int? {
            let request = session.exchanges[x].request
            let start = session.exchanges[x].sent
            func op(_ kind: GATTOperation.Kind) -> Int {
                var o = GATTOperation(kind: kind, start: preparedStart ?? start, end: mark, unanswered: unanswered)
                o.rejected = rejected
                return append(o)
            }
            if isDiscovery(request), let i = discovery {
                session.operations[i].end = mark
                session.operations[i].rejected = rejected
                session.operations[i].unanswered = unanswered
                closeDiscovery()
                return i
            }
            defer {
                for q in preparedExchanges { session.exchanges[q].operation = session.operations.count - 1 }
                longRead = nil; prepared = []; preparedStart = nil; preparedExchanges = []
            }
            switch request {
            case let .readRequest(r):
                return op(.read(handle: r.handle, value: []))
            case let .readBlobRequest(r):
                if let i = longRead, case let .read(handle, _) = session.operations[i].kind, handle == r.handle {
                    session.operations[i].end = mark
                    session.operations[i].rejected = rejected
                    session.operations[i].unanswered = unanswered
                    return i
                }
                return op(.unsupported("Read Blob Request handle 0x\(hex(r.handle)) offset \(r.offset) without a Read Request before it"))
            case let .writeRequest(w):
                let isConfiguration = session.database.characteristic(configurationHandle: w.handle) != nil
                return op(isConfiguration ? .configure(handle: w.handle, value: w.value) : .write(handle: w.handle, value: w.value, command: false))
            case let .prepareWriteRequest(w):
                let parts = prepared + [(w.handle, w.offset, w.partValue)]
                guard parts.allSatisfy({ $0.handle == w.handle }) else { return op(.unsupported("a queued write of \(parts.count) parts")) }
                return op(.write(handle: w.handle, value: parts.sorted { $0.offset < $1.offset }.flatMap(\.value), command: false))
            case .executeWriteRequest:
                guard let first = prepared.first, prepared.allSatisfy({ $0.handle == first.handle }) else {
                    return op(.unsupported("\(request.opcode.name)"))
                }
                return op(.write(handle: first.handle, value: prepared.sorted { $0.offset < $1.offset }.flatMap(\.value), command: false))
            case let .exchangeMTURequest(r):
                return op(.mtu(client: r.clientRxMTU, server: nil))
            default:
                return op(.unsupported("\(request.opcode.name)"))
            }
        }

        func addService(_ uuid: BluetoothUUID, start: UInt16, end: UInt16, x: Int) {
            session.database.addService(uuid, start: start, end: end)
            if let sc = session.exchanges[x].serviceChange { session.serviceChanges[sc].found.addService(uuid, start: start, end: end) }
            if let i = discovery, !session.operations[i].found.contains(uuid) { session.operations[i].found.append(uuid) }
        }

        for record in records {
            guard let first = record.bytes.first else {
                session.notes.append("\(record.mark): an empty ATT PDU from the \(record.fromCentral ? "central" : "peripheral") was skipped")
                continue
            }
            let opcode = ATTOpcode(first)
            let decoded: ATTPDU?
            var decodeError = ""
            do { decoded = try ATTPDU(decoding: record.bytes) } catch {
                decoded = nil
                decodeError = "\(error)"
            }
            if record.fromCentral {
                guard let pdu = decoded else {
                    session.notes.append("\(record.mark): a malformed ATT PDU from the central (\(describe(record.bytes))) was skipped: \(decodeError)")
                    continue
                }
                switch pdu.opcode.method {
                case .request:
                    if let p = pending {
                        // Listed once, by the scenario writer, as a step it cannot reproduce.
                        session.exchanges[p].superseded = true
                        session.exchanges[p].operation = append(GATTOperation(
                            kind: .unsupported("\(session.exchanges[p].request) (never answered; the central sent another request)"),
                            start: session.exchanges[p].sent, end: session.exchanges[p].sent, unanswered: true))
                    }
                    session.exchanges.append(ATTExchange(request: pdu, sent: record.mark))
                    let x = session.exchanges.count - 1
                    pending = x
                    // The central's re-discovery after Service Changed (Part G, 7.1): its Read By
                    // Group Type for the range, then characteristics and descriptors; no step.
                    if let sc = awaitingRediscovery ?? rediscovery {
                        var continues = false
                        if case let .readByGroupTypeRequest(r) = pdu, r.groupType == .primaryService {
                            continues = awaitingRediscovery != nil || r.range.start > rediscoveryStart
                            if awaitingRediscovery != nil { rediscoveryStart = r.range.start }
                        } else if awaitingRediscovery == nil, isDiscovery(pdu) {
                            continues = true
                        }
                        awaitingRediscovery = nil
                        rediscovery = continues ? sc : nil
                        if continues {
                            session.exchanges[x].serviceChange = sc
                            session.serviceChanges[sc].rediscovered = true
                            closeDiscovery()
                            longRead = nil
                            continue
                        }
                    }
                    switch pdu {
                    case let .readByGroupTypeRequest(r) where r.groupType == .primaryService:
                        // A new Discover All Primary Services starts from 0x0001.
                        if discovery != nil, r.range.start == 0x0001, discoveryHasGroupType || discoveryHasContents { closeDiscovery() }
                        discoveryStep(record.mark, services: true, all: true, uuid: nil)
                        discoveryHasGroupType = true
                    case let .findByTypeValueRequest(r) where r.attributeType == .primaryService:
                        if discovery != nil, r.range.start == 0x0001, discoveryHasContents { closeDiscovery() }
                        let uuid = try? { var rd = ByteReader(r.value); return try rd.readUUID(width: r.value.count) }()
                        discoveryStep(record.mark, services: true, all: false, uuid: uuid)
                    case let .readByTypeRequest(r) where r.attributeType == .characteristic || r.attributeType == .include:
                        discoveryStep(record.mark, services: false, all: false, uuid: nil)
                        discoveryHasContents = true
                    case .findInformationRequest:
                        discoveryStep(record.mark, services: false, all: false, uuid: nil)
                        discoveryHasContents = true
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
                    rediscovery = nil
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
                case .response:
                    // The central's GATT server answering the peripheral's Exchange MTU Request
                    // (either side may start it, Part F, 3.4.2.1): the ATT_MTU of the link is the
                    // smaller of the two, as when the central asks. The scenario's central asks.
                    if case let .exchangeMTUResponse(r) = pdu, let asked = peripheralMTURequest {
                        var o = GATTOperation(kind: .mtu(client: r.serverRxMTU, server: asked.mtu), start: asked.mark, end: record.mark)
                        o.askedByPeripheral = true
                        session.operations.append(o)
                        peripheralMTURequest = nil
                        session.notes.append("\(asked.mark): the peripheral asked for the ATT_MTU exchange (its Exchange MTU Request, \(asked.mtu)); the scenario's central asks instead (mtu: \(r.serverRxMTU)), which gives the link the same ATT_MTU, \(min(r.serverRxMTU, asked.mtu))")
                    }
                default:
                    break   // confirmations, and the central's own GATT server answering the peripheral
                }
                continue
            }
            // From the peripheral.
            guard let pdu = decoded else {
                switch opcode.method {
                case .response:
                    if let p = pending {
                        // A damaged answer ends the request outstanding (Part F, 3.3.2), as the lab's central takes it.
                        session.exchanges[p].answer = .rejected(record.bytes)
                        session.exchanges[p].answered = record.mark
                        pending = nil
                        if session.exchanges[p].serviceChange != nil { rediscovery = nil; continue }
                        session.exchanges[p].operation = operation(for: p, rejected: record.bytes, unanswered: false, at: record.mark)
                    } else {
                        session.unsolicited.append(UnsolicitedPDU(mark: record.mark, bytes: record.bytes))
                    }
                case .notification, .indication, .confirmation:
                    session.unsolicited.append(UnsolicitedPDU(mark: record.mark, bytes: record.bytes))
                default:
                    // A damaged request or command of the peripheral: sent as it is.
                    session.unsolicited.append(UnsolicitedPDU(mark: record.mark, bytes: record.bytes))
                }
                continue
            }
            switch pdu {
            case let .handleValueNotification(n):
                session.notifications.append(ValueNotification(mark: record.mark, handle: n.handle, value: n.value, indication: false))
                continue
            case let .handleValueIndication(n):
                if let changed = session.database.serviceChangedValueHandle, n.handle == changed, n.value.count == 4 {
                    // Service Changed: Start of Affected Attribute Handle Range (2), End (2).
                    let start = UInt16(n.value[0]) | UInt16(n.value[1]) << 8
                    let end = UInt16(n.value[2]) | UInt16(n.value[3]) << 8
                    session.serviceChanges.append(ServiceChange(mark: record.mark, start: start, end: end, before: session.database))
                    awaitingRediscovery = session.serviceChanges.count - 1
                    rediscovery = nil
                } else {
                    session.notifications.append(ValueNotification(mark: record.mark, handle: n.handle, value: n.value, indication: true))
                }
                continue
            case let .exchangeMTURequest(r) where peripheralMTURequest == nil:
                peripheralMTURequest = (record.mark, r.clientRxMTU)
                continue
            default: break
            }
            guard pdu.opcode.method == .response else {
                // The peripheral's own requests and commands to the central (its GATT server), and
                // opcodes no one defined: sent as they are (`send-pdu`).
                session.unsolicited.append(UnsolicitedPDU(mark: record.mark, bytes: record.bytes))
                continue
            }
            guard let p = pending else {
                if resumed, session.exchanges.isEmpty {
                    // The answer to a request sent before the capture started: what it tells of the
                    // database is kept (a primary service discovery's Read By Group Type Response,
                    // the usual first answer of a resumed log), nothing is replayed.
                    session.answersBeforeCapture += 1
                    if case let .readByGroupTypeResponse(resp) = pdu {
                        for e in resp.entries where e.value.count == 2 || e.value.count == 16 {
                            var rd = ByteReader(e.value)
                            if let uuid = try? rd.readUUID(width: e.value.count) {
                                session.database.addService(uuid, start: e.handle, end: e.endGroupHandle)
                                harvested.append(uuid)
                            }
                        }
                    }
                    session.notes.append("\(record.mark): \(pdu.opcode.name), the answer to a request sent before the capture started; not reproduced\(pdu.opcode == .readByGroupTypeResponse ? " (the services it lists are declared)" : "")")
                    continue
                }
                session.unsolicited.append(UnsolicitedPDU(mark: record.mark, bytes: record.bytes))
                continue
            }
            let request = session.exchanges[p].request
            let fits: Bool
            if case let .errorResponse(e) = pdu { fits = e.requestOpcode == request.opcode } else { fits = request.opcode.responseOpcode == pdu.opcode }
            pending = nil
            session.exchanges[p].answered = record.mark
            guard fits else {
                session.exchanges[p].answer = .rejected(record.bytes)
                if session.exchanges[p].serviceChange != nil { rediscovery = nil; continue }
                session.exchanges[p].operation = operation(for: p, rejected: record.bytes, unanswered: false, at: record.mark)
                continue
            }
            var error: ATTErrorCode?
            if case let .errorResponse(e) = pdu { error = e.error }
            session.exchanges[p].answer = error.map(ATTExchange.Answer.error) ?? .response
            let end = record.mark
            let countBefore = session.operations.count
            var continued: Int?
            switch (request, pdu) {
            case let (.readByGroupTypeRequest(r), .readByGroupTypeResponse(resp)) where r.groupType == .primaryService:
                for e in resp.entries where e.value.count == 2 || e.value.count == 16 {
                    var rd = ByteReader(e.value)
                    if let uuid = try? rd.readUUID(width: e.value.count) { addService(uuid, start: e.handle, end: e.endGroupHandle, x: p) }
                }
            case let (.findByTypeValueRequest(r), .findByTypeValueResponse(resp)) where r.attributeType == .primaryService:
                var rd = ByteReader(r.value)
                if let uuid = try? rd.readUUID(width: r.value.count) {
                    for range in resp.handles { addService(uuid, start: range.start, end: range.end, x: p) }
                }
            case let (.readByTypeRequest(r), .readByTypeResponse(resp)) where r.attributeType == .characteristic:
                for e in resp.entries {
                    session.database.addCharacteristic(declaration: e.handle, value: e.value)
                    if let sc = session.exchanges[p].serviceChange { session.serviceChanges[sc].found.addCharacteristic(declaration: e.handle, value: e.value) }
                }
            case let (.findInformationRequest, .findInformationResponse(resp)):
                for e in resp.entries {
                    session.database.addDescriptor(handle: e.handle, uuid: e.uuid)
                    if let sc = session.exchanges[p].serviceChange { session.serviceChanges[sc].found.addDescriptor(handle: e.handle, uuid: e.uuid) }
                }
            case (.exchangeMTURequest(let r), _):
                var server: UInt16?
                if case let .exchangeMTUResponse(resp) = pdu { server = resp.serverRxMTU }
                session.operations.append(GATTOperation(kind: .mtu(client: r.clientRxMTU, server: server), start: session.exchanges[p].sent, end: end, error: error))
            case (.readRequest(let r), _):
                var value: [UInt8] = []
                if case let .readResponse(resp) = pdu { value = resp.value }
                session.operations.append(GATTOperation(kind: .read(handle: r.handle, value: value), start: session.exchanges[p].sent, end: end, error: error))
                longRead = error == nil ? session.operations.count - 1 : nil
            case (.readBlobRequest(let r), _):
                if let i = longRead, case let .read(handle, value) = session.operations[i].kind, handle == r.handle {
                    if case let .readBlobResponse(resp) = pdu {
                        session.operations[i].kind = .read(handle: handle, value: value + resp.partValue)
                    } else if error != .attributeNotLong && error != .invalidOffset {
                        session.operations[i].error = error
                    }
                    session.operations[i].end = end
                    continued = i
                } else {
                    session.operations.append(GATTOperation(kind: .unsupported("Read Blob Request handle 0x\(hex(r.handle)) offset \(r.offset) without a Read Request before it"),
                                                            start: session.exchanges[p].sent, end: end, error: error))
                }
            case (.readByTypeRequest(let r), _) where r.attributeType != .characteristic && r.attributeType != .include:
                // Read Using Characteristic UUID (Part G, 4.8.2).
                if case let .readByTypeResponse(resp) = pdu, let first = resp.entries.first {
                    session.operations.append(GATTOperation(kind: .read(handle: first.handle, value: first.value), start: session.exchanges[p].sent, end: end))
                } else {
                    session.operations.append(GATTOperation(kind: .unsupported("Read By Type Request for \(r.attributeType) in \(r.range)"),
                                                            start: session.exchanges[p].sent, end: end, error: error))
                }
            case (.writeRequest(let w), _):
                let isConfiguration = session.database.characteristic(configurationHandle: w.handle) != nil
                let kind: GATTOperation.Kind = isConfiguration ? .configure(handle: w.handle, value: w.value)
                    : .write(handle: w.handle, value: w.value, command: false)
                session.operations.append(GATTOperation(kind: kind, start: session.exchanges[p].sent, end: end, error: error))
            case (.prepareWriteRequest(let w), _):
                if prepared.isEmpty { preparedStart = session.exchanges[p].sent }
                if error == nil {
                    prepared.append((w.handle, w.offset, w.partValue))
                    preparedExchanges.append(p)
                } else {
                    session.operations.append(GATTOperation(kind: .write(handle: w.handle, value: w.partValue, command: false),
                                                            start: preparedStart ?? session.exchanges[p].sent, end: end, error: error))
                    for q in preparedExchanges { session.exchanges[q].operation = session.operations.count - 1 }
                    prepared = []
                    preparedExchanges = []
                }
            case (.executeWriteRequest(let x), _):
                if x.flags == .write, let first = prepared.first, prepared.allSatisfy({ $0.handle == first.handle }) {
                    let value = prepared.sorted { $0.offset < $1.offset }.flatMap(\.value)
                    session.operations.append(GATTOperation(kind: .write(handle: first.handle, value: value, command: false),
                                                            start: preparedStart ?? session.exchanges[p].sent, end: end, error: error))
                } else if !prepared.isEmpty {
                    session.operations.append(GATTOperation(kind: .unsupported("a reliable or cancelled queued write of \(prepared.count) parts"),
                                                            start: preparedStart ?? session.exchanges[p].sent, end: end, error: error))
                }
                if session.operations.count > countBefore {
                    for q in preparedExchanges { session.exchanges[q].operation = session.operations.count - 1 }
                }
                prepared = []
                preparedExchanges = []
            case (.readByGroupTypeRequest, _), (.findByTypeValueRequest, _), (.readByTypeRequest, _), (.findInformationRequest, _):
                // Attribute Not Found ends a discovery procedure; any other error fails it (Part G, 4.4–4.7).
                if let error, error != .attributeNotFound, session.exchanges[p].serviceChange == nil, let i = discovery {
                    session.operations[i].error = error
                    session.operations[i].end = end
                    session.exchanges[p].operation = i
                    closeDiscovery()
                    continue
                }
            default:
                session.operations.append(GATTOperation(kind: .unsupported("\(request.opcode.name)"), start: session.exchanges[p].sent, end: end, error: error))
            }
            if let sc = session.exchanges[p].serviceChange {
                session.serviceChanges[sc].rediscoveryEnd = end
                continue
            }
            if let i = discovery {
                session.operations[i].end = end
                session.exchanges[p].operation = i
            } else if let i = continued {
                session.exchanges[p].operation = i
            } else if session.operations.count > countBefore {
                session.exchanges[p].operation = session.operations.count - 1
            }
        }
        if let p = pending, session.exchanges[p].serviceChange == nil {
            session.exchanges[p].operation = operation(for: p, rejected: nil, unanswered: true, at: session.exchanges[p].sent)
        }
        // The discovery the capture caught in the middle found what the answers before it listed too.
        if let i = session.operations.firstIndex(where: { if case .discover = $0.kind { return true } else { return false } }) {
            session.operations[i].found = harvested.filter { !session.operations[i].found.contains($0) } + session.operations[i].found
        }
        session.inferUndiscovered()
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
