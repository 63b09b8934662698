import BLEWire
import ATT

/// Write requests and commands, queued writes, and Client Characteristic Configuration
/// (Core 5.4, Vol 3, Part F, 3.4.5 and 3.4.6; Part G, 4.9 and 3.3.3.3).
extension GATTServer {
    /// Whether the attribute at index `i` may be written with `method`: the error to answer when not.
    /// Part G, 3.3.1.1: Write Request and Prepare Write need `write`; Write Command needs
    /// `write-without-response`. Declarations are never writable; a CCCD always is.
    func writePermissionError(at i: Int, method: GATTWriteMethod, for connection: GATTServerConnection? = nil) -> ATTErrorCode? {
        if let error = propertyWriteError(at: i, method: method) { return error }
        guard let connection else { return nil }
        return securityError(at: i, writing: true, for: connection)
    }

    /// The link-security answer for attribute `i` (AttributePermissions), nil when allowed.
    func securityError(at i: Int, writing: Bool, for connection: GATTServerConnection) -> ATTErrorCode? {
        let attribute = database.attributes[i]
        guard !attribute.permissions.isOpen else { return nil }
        return attribute.permissions.error(writing: writing, on: connection.security, peerIsBonded: connection.peerIsBonded()) { [weak self] in
            self?.authorizes?(GATTAuthorizationRequest(connection: connection, handle: attribute.handle, uuid: attribute.type, isWrite: writing))
                ?? false
        }
    }

    private func propertyWriteError(at i: Int, method: GATTWriteMethod) -> ATTErrorCode? {
        switch database.attributes[i].kind {
        case .serviceDeclaration, .characteristicDeclaration:
            return .writeNotPermitted
        case let .characteristicValue(properties):
            let needed: CharacteristicProperties = method == .command ? .writeWithoutResponse : .write
            return properties.contains(needed) ? nil : .writeNotPermitted
        case .clientCharacteristicConfiguration:
            return nil
        case let .descriptor(_, isWritable):
            return isWritable ? nil : .writeNotPermitted
        }
    }

    /// Stores `value` at attribute index `i` once permissions are known to allow it: a CCCD goes to
    /// the connection's configuration; anything else through the write handler, if any, then to the
    /// database. Completes with nil on success or the error to answer.
    func applyWrite(_ value: [UInt8], at i: Int, for connection: GATTServerConnection, method: GATTWriteMethod,
                    completion: @escaping (ATTErrorCode?) -> Void) {
        let attribute = database.attributes[i]
        guard value.count <= ATTBearer.maximumAttributeValueLength else { return completion(.invalidAttributeValueLength) }
        if attribute.kind == .clientCharacteristicConfiguration {
            return completion(configure(value, at: i, for: connection))
        }
        if attribute.type == .serverCharacteristicConfiguration {
            // Part G, 3.3.3.4: two octets; bit 0 (Broadcast) is the only one defined.
            guard value.count == 2 else { return completion(.invalidAttributeValueLength) }
            guard value[1] == 0, value[0] & ~0x01 == 0 else { return completion(.valueNotAllowed) }
        }
        let handle = attribute.handle
        guard let handler = (writeHandlers.isEmpty ? nil : writeHandlers[handle]) ?? writeHandler else {
            store(value, at: handle, uuid: attribute.type, connection, method)
            return completion(nil)
        }
        var answered = false
        let request = GATTWriteRequest(connection: connection, handle: handle, uuid: attribute.type, value: value, method: method)
        handler(request) { [weak self] result in
            guard !answered, let self else { return }
            answered = true
            switch result {
            case .accept:
                self.store(value, at: handle, uuid: attribute.type, connection, method)
                completion(nil)
            case let .error(code):
                completion(code)
            }
        }
    }

    private func store(_ value: [UInt8], at handle: UInt16, uuid: BluetoothUUID, _ connection: GATTServerConnection,
                       _ method: GATTWriteMethod) {
        database.setValue(value, at: handle)
        onWrite?(GATTWriteEvent(connection: connection, handle: handle, uuid: uuid, value: value, method: method))
    }

    /// A write of a Client Characteristic Configuration descriptor (Part G, 3.3.3.3): exactly two
    /// octets (else Invalid Attribute Value Length); only bits the characteristic's properties
    /// offer (notify 0x0001, indicate 0x0002), else Value Not Allowed.
    private func configure(_ value: [UInt8], at i: Int, for connection: GATTServerConnection) -> ATTErrorCode? {
        guard value.count == 2 else { return .invalidAttributeValueLength }
        let attribute = database.attributes[i]
        let bits = UInt16(value[0]) | UInt16(value[1]) << 8
        let characteristic = database.attribute(attribute.characteristicValueHandle)
        let properties = characteristic?.properties ?? []
        var allowed: UInt16 = 0
        if properties.contains(.notify) { allowed |= GATTClientConfiguration.notification.rawValue }
        if properties.contains(.indicate) { allowed |= GATTClientConfiguration.indication.rawValue }
        guard bits & ~allowed == 0 else { return .valueNotAllowed }
        let slot = attribute.configurationSlot
        guard slot >= 0, slot < connection.configurations.count else { return .unlikelyError }
        let old = connection.configurations[slot]
        connection.configurations[slot] = bits
        if old != bits {
            onSubscriptionChange?(GATTSubscriptionEvent(connection: connection, valueHandle: attribute.characteristicValueHandle,
                                                        characteristic: characteristic?.type ?? attribute.type,
                                                        old: GATTClientConfiguration(rawValue: old),
                                                        new: GATTClientConfiguration(rawValue: bits)))
        }
        return nil
    }

    // MARK: Write Request, Write Command

    /// Write Request (Part F, 3.4.5.1): Write Response, or an Error Response.
    func write(_ r: ATTWriteRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        guard let i = database.index(of: r.handle) else { return responder.fail(.invalidHandle, handle: r.handle) }
        if let error = writePermissionError(at: i, method: .request, for: connection) { return responder.fail(error, handle: r.handle) }
        applyWrite(r.value, at: i, for: connection, method: .request) { error in
            if let error { responder.fail(error, handle: r.handle) } else { responder.respond(.writeResponse(ATTWriteResponse())) }
        }
    }

    /// Write Command (Part F, 3.4.5.3): applied when allowed, otherwise dropped. Nothing is ever
    /// sent back, not even an error.
    func handle(command: ATTPDU, from connection: GATTServerConnection) {
        guard case let .writeCommand(c) = command, let i = database.index(of: c.handle),
              writePermissionError(at: i, method: .command, for: connection) == nil else { return }
        applyWrite(c.value, at: i, for: connection, method: .command) { _ in }
    }

    // MARK: Queued writes

    /// Prepare Write Request (Part F, 3.4.6.1): permissions are checked now, offsets and lengths
    /// when executed. The response echoes the request.
    func prepareWrite(_ r: ATTPrepareWriteRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        guard let i = database.index(of: r.handle) else { return responder.fail(.invalidHandle, handle: r.handle) }
        if let error = writePermissionError(at: i, method: .executeWrite, for: connection) { return responder.fail(error, handle: r.handle) }
        guard connection.preparedWrites.count < prepareQueueLimit else { return responder.fail(.prepareQueueFull, handle: r.handle) }
        connection.preparedWrites.append(.init(handle: r.handle, offset: Int(r.offset), value: r.partValue))
        responder.respond(.prepareWriteResponse(ATTPrepareWriteResponse(handle: r.handle, offset: r.offset, partValue: r.partValue)))
    }

    /// Execute Write Request (Part F, 3.4.6.3). Flags 0x00 discards the queue. Flags 0x01 writes
    /// the prepared values in the order they were prepared: each part replaces the value from its
    /// offset on, so an offset past the value built so far is Invalid Offset and more than 512
    /// octets is Invalid Attribute Value Length. Every part is checked before anything is
    /// written; then each run of consecutive parts for one attribute is one write (a long write
    /// stays one write of the whole value), runs in queue order: parts A, B, A make three writes.
    /// The queue is empty afterwards in every case.
    func executeWrite(_ r: ATTExecuteWriteRequest, _ connection: GATTServerConnection, _ responder: ATTResponder) {
        let queue = connection.preparedWrites
        connection.preparedWrites = []
        guard r.flags == .write, !queue.isEmpty else {
            return responder.respond(.executeWriteResponse(ATTExecuteWriteResponse()))
        }
        // Each run of consecutive parts for one handle, with the value it leaves.
        var runs: [(handle: UInt16, value: [UInt8])] = []
        var built: [UInt16: [UInt8]] = [:]
        for part in queue {
            guard let i = database.index(of: part.handle) else { return responder.fail(.invalidHandle, handle: part.handle) }
            var value = built[part.handle] ?? currentValue(at: i, for: connection)
            guard part.offset <= value.count else { return responder.fail(.invalidOffset, handle: part.handle) }
            value.replaceSubrange(part.offset..., with: part.value)
            guard value.count <= ATTBearer.maximumAttributeValueLength else {
                return responder.fail(.invalidAttributeValueLength, handle: part.handle)
            }
            built[part.handle] = value
            if runs.last?.handle == part.handle { runs[runs.count - 1].value = value } else { runs.append((part.handle, value)) }
        }
        func step(_ k: Int) {
            guard k < runs.count else { return responder.respond(.executeWriteResponse(ATTExecuteWriteResponse())) }
            let (handle, value) = runs[k]
            guard let i = database.index(of: handle) else { return responder.fail(.invalidHandle, handle: handle) }
            applyWrite(value, at: i, for: connection, method: .executeWrite) { error in
                if let error { responder.fail(error, handle: handle) } else { step(k + 1) }
            }
        }
        step(0)
    }

    /// The value a queued write starts from: the stored value, or the connection's CCCD.
    private func currentValue(at i: Int, for connection: GATTServerConnection) -> [UInt8] {
        let attribute = database.attributes[i]
        guard attribute.kind == .clientCharacteristicConfiguration else { return attribute.value }
        let slot = attribute.configurationSlot
        let bits = slot >= 0 && slot < connection.configurations.count ? connection.configurations[slot] : 0
        return GATTClientConfiguration(rawValue: bits).littleEndianBytes
    }
}
