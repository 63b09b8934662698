import BLEWire
import ATT

/// A GATT client over one bearer (Core 5.4, Vol 3, Part G, 4): discovery, reads (long reads
/// included), writes (with and without response, long writes), and subscriptions.
///
/// Procedures may be started at any time; the bearer sends their requests one at a time, in the
/// order they were made. Notifications and indications reach `onNotification` in arrival order;
/// the bearer confirms an indication right after it was delivered.
public final class GATTClient: ATTClientDelegate {
    public let bearer: ATTBearer
    /// Every Handle Value Notification and Indication, in arrival order.
    public var onNotification: ((GATTNotification) -> Void)?
    /// The result of the last `discoverAll`.
    public internal(set) var services: [GATTRemoteService] = []

    /// Becomes `bearer`'s client delegate. The bearer holds its delegates weakly: keep the client.
    public init(bearer: ATTBearer) {
        self.bearer = bearer
        bearer.client = self
    }

    public var mtu: Int { bearer.mtu }

    // MARK: ATTClientDelegate

    public func attBearer(_ bearer: ATTBearer, didReceiveNotification handle: UInt16, value: [UInt8]) {
        onNotification?(GATTNotification(handle: handle, value: value, isIndication: false))
    }

    public func attBearer(_ bearer: ATTBearer, didReceiveIndication handle: UInt16, value: [UInt8]) {
        onNotification?(GATTNotification(handle: handle, value: value, isIndication: true))
        // Service Changed (Part G, 7.1): the value is the Affected Attribute Handle Range, start
        // and end. Recognised only on the 0x2A05 value handle discovery found in service 0x1801.
        if let changed = serviceChangedValueHandle, handle == changed {
            guard value.count == 4 else {
                bearer.violation(.malformed(.handleValueIndication, .truncated(needed: 4, available: value.count, at: 3)))
                return
            }
            let range = ATTHandleRange(start: UInt16(value[0]) | UInt16(value[1]) << 8, end: UInt16(value[2]) | UInt16(value[3]) << 8)
            onServiceChanged?(range)
        }
    }

    /// A Service Changed indication arrived (already confirmed by the bearer once this returns);
    /// the argument is the affected handle range. The client does not re-discover by itself: call
    /// `rediscover(_:completion:)`.
    public var onServiceChanged: ((ATTHandleRange) -> Void)?

    /// The value handle of Service Changed (0x2A05 in service 0x1801), once discovered.
    public var serviceChangedValueHandle: UInt16? {
        services.first { $0.uuid == .genericAttributeService }?.characteristic(.serviceChanged)?.valueHandle
    }

    /// The characteristic discovery found with this value handle; nil for a handle the client never
    /// discovered (a notification for it has no characteristic to go to).
    public func characteristic(valueHandle: UInt16) -> GATTRemoteCharacteristic? {
        for s in services where s.range.start < valueHandle && valueHandle <= s.range.end {
            if let c = s.characteristics.first(where: { $0.valueHandle == valueHandle }) { return c }
        }
        return nil
    }

    /// Takes `services` as the server's database without discovering it: the client's attribute
    /// cache from an earlier connection (Core 5.4, Vol 3, Part G, 2.5.2), as phones keep one for
    /// bonded and recently seen devices. Reads, writes, subscriptions and notifications then use
    /// its handles at once; a later discovery replaces it.
    public func restoreCache(_ services: [GATTRemoteService]) {
        self.services = services.sorted { $0.range.start < $1.range.start }
    }

    // MARK: Plumbing

    /// Sends one request; an ATT failure becomes a `GATTError`.
    func transact(_ request: ATTPDU, _ completion: @escaping (Result<ATTPDU, GATTError>) -> Void) {
        bearer.send(request: request) { result in completion(result.mapError(GATTError.init)) }
    }

    // MARK: MTU

    /// Exchange MTU (Part G, 4.3.1), offering the bearer's `preferredMTU`; completes with ATT_MTU.
    public func exchangeMTU(completion: @escaping (Result<Int, GATTError>) -> Void) {
        bearer.exchangeMTU { completion($0.mapError(GATTError.init)) }
    }

    // MARK: Reading

    /// Read Characteristic Value / Read Long Characteristic Values (Part G, 4.8.1 and 4.8.3): a
    /// Read Request, then Read Blob Requests while each answer filled ATT_MTU - 1 octets.
    public func read(handle: UInt16, completion: @escaping (Result<[UInt8], GATTError>) -> Void) {
        transact(.readRequest(ATTReadRequest(handle: handle))) { result in
            switch result {
            case let .success(.readResponse(response)):
                guard response.value.count >= self.mtu - 1 else { return completion(.success(response.value)) }
                self.readBlobs(handle: handle, value: response.value, completion: completion)
            case .success:
                completion(.failure(.invalidResponse("not a Read Response")))
            case let .failure(error):
                completion(.failure(error))
            }
        }
    }

    private func readBlobs(handle: UInt16, value: [UInt8], completion: @escaping (Result<[UInt8], GATTError>) -> Void) {
        // An attribute value is at most 512 octets (Part F, 3.2.9): never read past that.
        guard value.count < ATTBearer.maximumAttributeValueLength else { return completion(.success(value)) }
        let request = ATTReadBlobRequest(handle: handle, offset: UInt16(value.count))
        transact(.readBlobRequest(request)) { result in
            switch result {
            case let .success(.readBlobResponse(response)):
                let value = value + response.partValue
                guard response.partValue.count >= self.mtu - 1 else { return completion(.success(value)) }
                self.readBlobs(handle: handle, value: value, completion: completion)
            case .success:
                completion(.failure(.invalidResponse("not a Read Blob Response")))
            case .failure(.att(.attributeNotLong, _)):
                // The value was exactly ATT_MTU - 1 octets long and the server says so.
                completion(.success(value))
            case let .failure(error):
                completion(.failure(error))
            }
        }
    }

    /// Read Using Characteristic UUID (Part G, 4.8.2): one Read By Type Request over `range`;
    /// the handles and values of the first matching attributes (all of one length).
    public func read(uuid: BluetoothUUID, in range: ATTHandleRange = .all,
                     completion: @escaping (Result<[ATTHandleValue], GATTError>) -> Void) {
        transact(.readByTypeRequest(ATTReadByTypeRequest(range: range, attributeType: uuid))) { result in
            switch result {
            case let .success(.readByTypeResponse(response)): completion(.success(response.entries))
            case .success: completion(.failure(.invalidResponse("not a Read By Type Response")))
            case let .failure(error): completion(.failure(error))
            }
        }
    }

    /// Read Multiple Characteristic Values (Part G, 4.8.4): the values concatenated.
    public func readMultiple(handles: [UInt16], completion: @escaping (Result<[UInt8], GATTError>) -> Void) {
        transact(.readMultipleRequest(ATTReadMultipleRequest(handles: handles))) { result in
            switch result {
            case let .success(.readMultipleResponse(response)): completion(.success(response.values))
            case .success: completion(.failure(.invalidResponse("not a Read Multiple Response")))
            case let .failure(error): completion(.failure(error))
            }
        }
    }

    // MARK: Writing

    /// Write Characteristic Value (Part G, 4.9.3) with a Write Request, or Write Long
    /// Characteristic Values (4.9.4) when the value exceeds ATT_MTU - 3.
    public func write(_ value: [UInt8], handle: UInt16, completion: @escaping (Result<Void, GATTError>) -> Void) {
        guard value.count <= ATTBearer.maximumAttributeValueLength else {
            return completion(.failure(.valueTooLong(length: value.count, maximum: ATTBearer.maximumAttributeValueLength)))
        }
        guard value.count <= mtu - 3 else { return writeLong(value, handle: handle, completion: completion) }
        transact(.writeRequest(ATTWriteRequest(handle: handle, value: value))) { result in
            switch result {
            case .success(.writeResponse): completion(.success(()))
            case .success: completion(.failure(.invalidResponse("not a Write Response")))
            case let .failure(error): completion(.failure(error))
            }
        }
    }

    /// Write Without Response (Part G, 4.9.1): a Write Command, never answered. False when the
    /// bearer is not open or the value exceeds ATT_MTU - 3.
    @discardableResult
    public func writeWithoutResponse(_ value: [UInt8], handle: UInt16) -> Bool {
        guard value.count <= mtu - 3 else { return false }
        return bearer.send(command: .writeCommand(ATTWriteCommand(handle: handle, value: value)))
    }

    /// Write Long Characteristic Values (Part G, 4.9.4): Prepare Write Requests of ATT_MTU - 5
    /// octets, each echo checked, then an Execute Write Request. On a mismatched echo or an error
    /// the server's queue is cancelled (Execute Write, flags 0x00) before failing.
    public func writeLong(_ value: [UInt8], handle: UInt16, offset: Int = 0,
                          completion: @escaping (Result<Void, GATTError>) -> Void) {
        guard offset >= 0, offset + value.count <= ATTBearer.maximumAttributeValueLength else {
            return completion(.failure(.valueTooLong(length: offset + value.count, maximum: ATTBearer.maximumAttributeValueLength)))
        }
        func cancel(then error: GATTError) {
            transact(.executeWriteRequest(ATTExecuteWriteRequest(flags: .cancel))) { _ in completion(.failure(error)) }
        }
        func step(_ position: Int) {
            guard position < value.count || (position == 0 && value.isEmpty) else { return execute() }
            let end = min(value.count, position + mtu - 5)
            let request = ATTPrepareWriteRequest(handle: handle, offset: UInt16(offset + position), partValue: Array(value[position..<end]))
            transact(.prepareWriteRequest(request)) { result in
                switch result {
                case let .success(.prepareWriteResponse(echo)):
                    guard echo.handle == request.handle, echo.offset == request.offset, echo.partValue == request.partValue else {
                        return cancel(then: .preparedWriteMismatch(handle: request.handle, offset: request.offset))
                    }
                    if value.isEmpty { return execute() }
                    step(end)
                case .success:
                    cancel(then: .invalidResponse("not a Prepare Write Response"))
                case let .failure(error):
                    if case .att = error { cancel(then: error) } else { completion(.failure(error)) }
                }
            }
        }
        func execute() {
            transact(.executeWriteRequest(ATTExecuteWriteRequest(flags: .write))) { result in
                switch result {
                case .success(.executeWriteResponse): completion(.success(()))
                case .success: completion(.failure(.invalidResponse("not an Execute Write Response")))
                case let .failure(error): completion(.failure(error))
                }
            }
        }
        step(0)
    }

    // MARK: Subscribing

    /// Writes the characteristic's Client Characteristic Configuration descriptor (Part G,
    /// 4.10.1 and 4.11.1), discovering its descriptors first when that has not been done.
    public func setConfiguration(_ configuration: GATTClientConfiguration, for characteristic: GATTRemoteCharacteristic,
                                 completion: @escaping (Result<Void, GATTError>) -> Void) {
        if let handle = characteristic.configurationHandle {
            return write(configuration.littleEndianBytes, handle: handle, completion: completion)
        }
        discoverDescriptors(of: characteristic) { result in
            switch result {
            case let .failure(error):
                completion(.failure(error))
            case let .success(descriptors):
                guard let handle = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration })?.handle else {
                    return completion(.failure(.noConfigurationDescriptor(valueHandle: characteristic.valueHandle)))
                }
                self.write(configuration.littleEndianBytes, handle: handle, completion: completion)
            }
        }
    }

    /// Enables notifications, or indications when the characteristic offers only those.
    public func subscribe(to characteristic: GATTRemoteCharacteristic, completion: @escaping (Result<Void, GATTError>) -> Void) {
        let configuration: GATTClientConfiguration = characteristic.properties.contains(.notify) || !characteristic.properties.contains(.indicate)
            ? .notification : .indication
        setConfiguration(configuration, for: characteristic, completion: completion)
    }

    /// Disables notifications and indications.
    public func unsubscribe(from characteristic: GATTRemoteCharacteristic, completion: @escaping (Result<Void, GATTError>) -> Void) {
        setConfiguration([], for: characteristic, completion: completion)
    }
}
