import BLEWire
import ATT

/// Discovery and read requests (Core 5.4, Vol 3, Part F, 3.4.3 and 3.4.4; Part G, 4.4–4.8).
extension GATTServer {
    /// One attribute value as read for a client: the value, or the error to answer with.
    enum AttributeRead {
        case success([UInt8])
        case failure(ATTErrorCode)
    }

    /// Every request a bearer hands over goes through this exhaustive switch.
    func handle(_ request: ATTPDU, from connection: GATTServerConnection, responder: ATTResponder) {
        switch request {
        case let .findInformationRequest(r): findInformation(r, responder)
        case let .findByTypeValueRequest(r): findByTypeValue(r, connection, responder)
        case let .readByTypeRequest(r): readByType(r, connection, responder)
        case let .readByGroupTypeRequest(r): readByGroupType(r, responder)
        case let .readRequest(r): read(r, connection, responder)
        case let .readBlobRequest(r): readBlob(r, connection, responder)
        case let .readMultipleRequest(r): readMultiple(r, connection, responder)
        case let .writeRequest(r): write(r, connection, responder)
        case let .prepareWriteRequest(r): prepareWrite(r, connection, responder)
        case let .executeWriteRequest(r): executeWrite(r, connection, responder)
        case .errorResponse, .exchangeMTURequest, .exchangeMTUResponse, .findInformationResponse,
             .findByTypeValueResponse, .readByTypeResponse, .readResponse, .readBlobResponse,
             .readMultipleResponse, .readByGroupTypeResponse, .writeResponse, .writeCommand,
             .signedWriteCommand, .prepareWriteResponse, .executeWriteResponse, .handleValueNotification,
             .handleValueIndication, .handleValueConfirmation, .unknown:
            responder.fail(.requestNotSupported, handle: 0x0000)
        }
    }

    // MARK: Reading one attribute

    /// Reads the attribute at index `i` for `connection`, checking its permissions, taking a CCCD
    /// from the connection and asking a read handler when there is one. Completes synchronously
    /// unless a handler answers later.
    func readAttribute(at i: Int, for connection: GATTServerConnection, offset: Int, opcode: ATTOpcode,
                       completion: @escaping (AttributeRead) -> Void) {
        let attribute = database.attributes[i]
        switch attribute.kind {
        case .serviceDeclaration, .characteristicDeclaration:
            return completion(.success(attribute.value))
        case .clientCharacteristicConfiguration:
            let slot = attribute.configurationSlot
            let bits = slot >= 0 && slot < connection.configurations.count ? connection.configurations[slot] : 0
            return completion(.success(GATTClientConfiguration(rawValue: bits).littleEndianBytes))
        case let .characteristicValue(properties):
            guard properties.contains(.read) else { return completion(.failure(.readNotPermitted)) }
        case let .descriptor(isReadable, _):
            guard isReadable else { return completion(.failure(.readNotPermitted)) }
        }
        // What the properties allow, the link must also be protected enough for.
        if !attribute.permissions.isOpen, let error = securityError(at: i, writing: false, for: connection) {
            return completion(.failure(error))
        }
        let handle = attribute.handle
        guard let handler = (readHandlers.isEmpty ? nil : readHandlers[handle]) ?? readHandler else {
            didRead(attribute, connection, opcode, offset)
            return completion(.success(attribute.value))
        }
        var answered = false
        let request = GATTReadRequest(connection: connection, handle: handle, uuid: attribute.type, offset: offset, opcode: opcode)
        handler(request) { [weak self] result in
            guard !answered, let self else { return }
            answered = true
            switch result {
            case let .value(value):
                self.didRead(attribute, connection, opcode, offset)
                completion(.success(value))
            case .storedValue:
                self.didRead(attribute, connection, opcode, offset)
                completion(.success(self.database.attribute(handle)?.value ?? attribute.value))
            case let .error(code):
                completion(.failure(code))
            }
        }
    }

    private func didRead(_ attribute: GATTAttribute, _ connection: GATTServerConnection, _ opcode: ATTOpcode, _ offset: Int) {
        onRead?(GATTReadEvent(connection: connection, handle: attribute.handle, uuid: attribute.type, opcode: opcode, offset: offset))
    }

    // MARK: Read, Read Blob, Read Multiple

    /// Read Request (Part F, 3.4.4.3): the value, truncated to ATT_MTU - 1.
    func read(_ r: ATTReadRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        guard let i = database.index(of: r.handle) else { return responder.fail(.invalidHandle, handle: r.handle) }
        readAttribute(at: i, for: connection, offset: 0, opcode: .readRequest) { result in
            switch result {
            case let .success(value):
                responder.respond(.readResponse(ATTReadResponse(value: Array(value.prefix(responder.mtu - 1)))))
            case let .failure(code):
                responder.fail(code, handle: r.handle)
            }
        }
    }

    /// Read Blob Request (Part F, 3.4.4.5): the part from Value Offset, at most ATT_MTU - 1 octets;
    /// Invalid Offset when the offset is past the end (an offset equal to the length reads nothing).
    /// An attribute of a fixed length that fits in ATT_MTU - 1 octets (`hasFixedLength`: the
    /// declarations and the configuration descriptors) is answered Attribute Not Long (0x0B), as
    /// 3.4.4.5 allows: its whole value came with the Read Response.
    func readBlob(_ r: ATTReadBlobRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        guard let i = database.index(of: r.handle) else { return responder.fail(.invalidHandle, handle: r.handle) }
        let offset = Int(r.offset)
        let fixedLength = database.attributes[i].hasFixedLength
        readAttribute(at: i, for: connection, offset: offset, opcode: .readBlobRequest) { result in
            switch result {
            case let .success(value):
                guard offset <= value.count else { return responder.fail(.invalidOffset, handle: r.handle) }
                if fixedLength, value.count <= responder.mtu - 1 { return responder.fail(.attributeNotLong, handle: r.handle) }
                let end = min(value.count, offset + responder.mtu - 1)
                responder.respond(.readBlobResponse(ATTReadBlobResponse(partValue: Array(value[offset..<end]))))
            case let .failure(code):
                responder.fail(code, handle: r.handle)
            }
        }
    }

    /// Read Multiple Request (Part F, 3.4.4.7): the values concatenated, truncated to ATT_MTU - 1;
    /// the first handle that cannot be read fails the whole request.
    func readMultiple(_ r: ATTReadMultipleRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        var values: [UInt8] = []
        func step(_ k: Int) {
            guard k < r.handles.count else {
                return responder.respond(.readMultipleResponse(ATTReadMultipleResponse(values: Array(values.prefix(responder.mtu - 1)))))
            }
            let handle = r.handles[k]
            guard let i = database.index(of: handle) else { return responder.fail(.invalidHandle, handle: handle) }
            readAttribute(at: i, for: connection, offset: 0, opcode: .readMultipleRequest) { result in
                switch result {
                case let .success(value):
                    values += value
                    step(k + 1)
                case let .failure(code):
                    responder.fail(code, handle: handle)
                }
            }
        }
        step(0)
    }

    // MARK: Read By Type, Read By Group Type

    /// The index of the first attribute at or after index `from` within `range` with `type`.
    private func nextAttribute(from: Int, in range: ATTHandleRange, type: BluetoothUUID) -> Int? {
        var i = from
        let attributes = database.attributes
        while i < attributes.count, attributes[i].handle <= range.end {
            if attributes[i].type == type { return i }
            i += 1
        }
        return nil
    }

    /// Read By Type Request (Part F, 3.4.4.1 and 3.4.4.2): characteristic discovery (type 0x2803)
    /// and Read Using Characteristic UUID. Entries all have the length of the first; each value is
    /// truncated to min(ATT_MTU - 4, 253); as many as fit in ATT_MTU. An error on the first
    /// attribute is answered; an error on a later one ends the list before it.
    func readByType(_ r: ATTReadByTypeRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        guard r.range.isValid else { return responder.fail(.invalidHandle, handle: r.range.start) }
        guard let first = nextAttribute(from: database.firstIndex(atOrAfter: r.range.start), in: r.range, type: r.attributeType) else {
            return responder.fail(.attributeNotFound, handle: r.range.start)
        }
        let mtu = responder.mtu
        let maximumValue = min(mtu - 4, 253)
        var entries: [ATTHandleValue] = []
        var size = 2  // opcode and length
        func finish() { responder.respond(.readByTypeResponse(ATTReadByTypeResponse(entries: entries))) }
        func step(_ i: Int) {
            let handle = database.attributes[i].handle
            readAttribute(at: i, for: connection, offset: 0, opcode: .readByTypeRequest) { [weak self] result in
                guard let self else { return }
                switch result {
                case let .failure(code):
                    if entries.isEmpty { return responder.fail(code, handle: handle) }
                    return finish()
                case let .success(fullValue):
                    let value = Array(fullValue.prefix(maximumValue))
                    if let length = entries.first?.value.count, value.count != length || size + 2 + length > mtu {
                        return finish()
                    }
                    entries.append(ATTHandleValue(handle: handle, value: value))
                    size += 2 + value.count
                    guard size + 2 + value.count <= mtu,
                          let next = self.nextAttribute(from: i + 1, in: r.range, type: r.attributeType) else { return finish() }
                    step(next)
                }
            }
        }
        step(first)
    }

    /// Read By Group Type Request (Part F, 3.4.4.9 and 3.4.4.10; Part G, 4.4.1): only «Primary
    /// Service» and «Secondary Service» group; anything else is Unsupported Group Type.
    func readByGroupType(_ r: ATTReadByGroupTypeRequest, _ responder: ATTResponder) {
        guard r.range.isValid else { return responder.fail(.invalidHandle, handle: r.range.start) }
        guard r.groupType == .primaryService || r.groupType == .secondaryService else {
            return responder.fail(.unsupportedGroupType, handle: r.range.start)
        }
        let mtu = responder.mtu
        let maximumValue = min(mtu - 6, 251)
        var entries: [ATTGroupData] = []
        var size = 2
        var i = database.firstIndex(atOrAfter: r.range.start)
        let attributes = database.attributes
        while i < attributes.count, attributes[i].handle <= r.range.end {
            let attribute = attributes[i]
            i += 1
            guard attribute.type == r.groupType else { continue }
            let value = Array(attribute.value.prefix(maximumValue))
            if let length = entries.first?.value.count, value.count != length { break }
            guard size + 4 + value.count <= mtu else { break }
            entries.append(ATTGroupData(handle: attribute.handle, endGroupHandle: attribute.groupEndHandle, value: value))
            size += 4 + value.count
        }
        guard !entries.isEmpty else { return responder.fail(.attributeNotFound, handle: r.range.start) }
        responder.respond(.readByGroupTypeResponse(ATTReadByGroupTypeResponse(entries: entries)))
    }

    // MARK: Find Information, Find By Type Value

    /// Find Information Request (Part F, 3.4.3.1 and 3.4.3.2): handle and type of each attribute in
    /// the range, all in the format (16- or 128-bit) of the first, as many as fit in ATT_MTU.
    func findInformation(_ r: ATTFindInformationRequest, _ responder: ATTResponder) {
        guard r.range.isValid else { return responder.fail(.invalidHandle, handle: r.range.start) }
        let mtu = responder.mtu
        var format: ATTFindInformationResponse.Format?
        var entries: [ATTHandleUUID] = []
        var i = database.firstIndex(atOrAfter: r.range.start)
        let attributes = database.attributes
        while i < attributes.count, attributes[i].handle <= r.range.end {
            let attribute = attributes[i]
            i += 1
            let entryFormat = ATTFindInformationResponse.Format(for: attribute.type)
            if format == nil { format = entryFormat }
            guard entryFormat == format, 2 + (entries.count + 1) * entryFormat.entrySize <= mtu else { break }
            entries.append(ATTHandleUUID(handle: attribute.handle, uuid: attribute.type))
        }
        guard let format, !entries.isEmpty else { return responder.fail(.attributeNotFound, handle: r.range.start) }
        responder.respond(.findInformationResponse(ATTFindInformationResponse(format: format, entries: entries)))
    }

    /// Find By Type Value Request (Part F, 3.4.3.3 and 3.4.3.4; Part G, 4.4.2 Discover Primary
    /// Service by Service UUID). Service UUIDs compare as UUIDs (a 128-bit form of a 16-bit UUID
    /// matches); other values compare octet for octet, using the stored value.
    func findByTypeValue(_ r: ATTFindByTypeValueRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        guard r.range.isValid else { return responder.fail(.invalidHandle, handle: r.range.start) }
        let mtu = responder.mtu
        let wantedUUID = BluetoothUUID(attributeValue: r.value)
        var found: [ATTHandleRange] = []
        var i = database.firstIndex(atOrAfter: r.range.start)
        let attributes = database.attributes
        while i < attributes.count, attributes[i].handle <= r.range.end, 1 + (found.count + 1) * 4 <= mtu {
            let attribute = attributes[i]
            i += 1
            guard attribute.type == r.attributeType else { continue }
            let matches: Bool
            switch attribute.kind {
            case .serviceDeclaration:
                matches = wantedUUID.map { $0 == BluetoothUUID(attributeValue: attribute.value) } ?? (attribute.value == r.value)
            case .clientCharacteristicConfiguration:
                let slot = attribute.configurationSlot
                let bits = slot >= 0 && slot < connection.configurations.count ? connection.configurations[slot] : 0
                matches = GATTClientConfiguration(rawValue: bits).littleEndianBytes == r.value
            case let .characteristicValue(properties):
                matches = properties.contains(.read) && attribute.value == r.value
            case let .descriptor(isReadable, _):
                matches = isReadable && attribute.value == r.value
            case .characteristicDeclaration:
                matches = attribute.value == r.value
            }
            if matches { found.append(ATTHandleRange(start: attribute.handle, end: attribute.groupEndHandle)) }
        }
        guard !found.isEmpty else { return responder.fail(.attributeNotFound, handle: r.range.start) }
        responder.respond(.findByTypeValueResponse(ATTFindByTypeValueResponse(handles: found)))
    }
}
