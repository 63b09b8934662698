import BLEWire
import ATT

/// Discovery procedures (Core 5.4, Vol 3, Part G, 4.4, 4.6, 4.7).
extension GATTClient {
    /// Discover All Primary Services (Part G, 4.4.1): Read By Group Type «Primary Service» from
    /// 0x0001, each time from after the last End Group Handle, until Attribute Not Found or 0xFFFF.
    public func discoverPrimaryServices(completion: @escaping (Result<[GATTRemoteService], GATTError>) -> Void) {
        discoverPrimaryServices(in: .all, completion: completion)
    }

    /// Discover All Primary Services limited to `range` (the services declared in it), as a
    /// client does for the range a Service Changed indication names (Part G, 7.1).
    public func discoverPrimaryServices(in range: ATTHandleRange, completion: @escaping (Result<[GATTRemoteService], GATTError>) -> Void) {
        var found: [GATTRemoteService] = []
        guard range.isValid else { return completion(.success([])) }
        func step(_ start: UInt16) {
            let request = ATTReadByGroupTypeRequest(range: ATTHandleRange(start: start, end: range.end), groupType: .primaryService)
            transact(.readByGroupTypeRequest(request)) { result in
                switch result {
                case let .success(.readByGroupTypeResponse(response)):
                    var next = Int(start)
                    for entry in response.entries {
                        let what = "Read By Group Type Response entry \(hex4(entry.handle))..\(hex4(entry.endGroupHandle))"
                        guard Int(entry.handle) >= next else {
                            return completion(.failure(.invalidResponse("\(what) is out of order: it starts before \(hex4(UInt16(clamping: next))), where the request or the entry before it left off")))
                        }
                        guard entry.endGroupHandle >= entry.handle else {
                            return completion(.failure(.invalidResponse("\(what) ends before it starts")))
                        }
                        guard let uuid = BluetoothUUID(attributeValue: entry.value) else {
                            return completion(.failure(.invalidResponse("\(what) has a value of \(entry.value.count) octets, not a 2- or 16-octet service UUID")))
                        }
                        found.append(GATTRemoteService(uuid: uuid, range: ATTHandleRange(start: entry.handle, end: entry.endGroupHandle)))
                        next = Int(entry.endGroupHandle) + 1
                    }
                    if next > Int(range.end) { return completion(.success(found)) }
                    step(UInt16(next))
                case .success:
                    completion(.failure(.invalidResponse("not a Read By Group Type Response")))
                case .failure(.att(.attributeNotFound, _)):
                    completion(.success(found))
                case let .failure(error):
                    completion(.failure(error))
                }
            }
        }
        step(range.start)
    }

    /// Discover Primary Service by Service UUID (Part G, 4.4.2): Find By Type Value «Primary
    /// Service» with the UUID, until Attribute Not Found or 0xFFFF.
    public func discoverPrimaryServices(uuid: BluetoothUUID, completion: @escaping (Result<[GATTRemoteService], GATTError>) -> Void) {
        var found: [GATTRemoteService] = []
        func step(_ start: UInt16) {
            let request = ATTFindByTypeValueRequest(range: ATTHandleRange(start: start, end: 0xFFFF),
                                                    attributeType: .primaryService, value: uuid.attributeValueBytes)
            transact(.findByTypeValueRequest(request)) { result in
                switch result {
                case let .success(.findByTypeValueResponse(response)):
                    var next = Int(start)
                    for range in response.handles {
                        guard Int(range.start) >= next, range.end >= range.start else {
                            return completion(.failure(.invalidResponse("Find By Type Value Response range \(range) out of order")))
                        }
                        found.append(GATTRemoteService(uuid: uuid, range: range))
                        next = Int(range.end) + 1
                    }
                    if next > 0xFFFF { return completion(.success(found)) }
                    step(UInt16(next))
                case .success:
                    completion(.failure(.invalidResponse("not a Find By Type Value Response")))
                case .failure(.att(.attributeNotFound, _)):
                    completion(.success(found))
                case let .failure(error):
                    completion(.failure(error))
                }
            }
        }
        step(0x0001)
    }

    /// Discover All Characteristics of a Service (Part G, 4.6.1): Read By Type «Characteristic»
    /// over the service's range, from after the last declaration found, until Attribute Not Found
    /// or the end of the range. Each characteristic ends before the next declaration.
    public func discoverCharacteristics(of service: GATTRemoteService,
                                        completion: @escaping (Result<[GATTRemoteCharacteristic], GATTError>) -> Void) {
        var found: [GATTRemoteCharacteristic] = []
        func done() {
            for k in found.indices {
                found[k].endHandle = k + 1 < found.count ? found[k + 1].declarationHandle - 1 : service.range.end
            }
            completion(.success(found))
        }
        func step(_ start: UInt16) {
            let request = ATTReadByTypeRequest(range: ATTHandleRange(start: start, end: service.range.end), attributeType: .characteristic)
            transact(.readByTypeRequest(request)) { result in
                switch result {
                case let .success(.readByTypeResponse(response)):
                    var next = Int(start)
                    for entry in response.entries {
                        let what = "characteristic declaration at \(hex4(entry.handle))"
                        guard Int(entry.handle) >= next else {
                            return completion(.failure(.invalidResponse("\(what) is out of order: it comes before \(hex4(UInt16(clamping: next))), where the request or the declaration before it left off")))
                        }
                        guard entry.handle <= service.range.end else {
                            return completion(.failure(.invalidResponse("\(what) is outside its service, which ends at \(hex4(service.range.end))")))
                        }
                        guard let characteristic = GATTRemoteCharacteristic(declarationHandle: entry.handle, value: entry.value,
                                                                            serviceEnd: service.range.end) else {
                            return completion(.failure(.invalidResponse("\(what) is malformed: \(GATTRemoteCharacteristic.flaw(declarationHandle: entry.handle, value: entry.value, serviceEnd: service.range.end))")))
                        }
                        found.append(characteristic)
                        next = Int(entry.handle) + 1
                    }
                    if next > Int(service.range.end) { return done() }
                    step(UInt16(next))
                case .success:
                    completion(.failure(.invalidResponse("not a Read By Type Response")))
                case .failure(.att(.attributeNotFound, _)):
                    done()
                case let .failure(error):
                    completion(.failure(error))
                }
            }
        }
        guard service.range.isValid else { return completion(.success([])) }
        step(service.range.start)
    }

    /// Discover All Characteristic Descriptors (Part G, 4.7.1): Find Information from the value
    /// handle + 1 to the characteristic's end, until Attribute Not Found or the end.
    public func discoverDescriptors(of characteristic: GATTRemoteCharacteristic,
                                    completion: @escaping (Result<[GATTRemoteDescriptor], GATTError>) -> Void) {
        var found: [GATTRemoteDescriptor] = []
        let end = characteristic.endHandle
        func step(_ start: UInt16) {
            transact(.findInformationRequest(ATTFindInformationRequest(start: start, end: end))) { result in
                switch result {
                case let .success(.findInformationResponse(response)):
                    var next = Int(start)
                    for entry in response.entries {
                        guard Int(entry.handle) >= next, entry.handle <= end else {
                            return completion(.failure(.invalidResponse("Find Information Response handle \(hex4(entry.handle)) out of order")))
                        }
                        found.append(GATTRemoteDescriptor(handle: entry.handle, uuid: entry.uuid))
                        next = Int(entry.handle) + 1
                    }
                    if next > Int(end) { return completion(.success(found)) }
                    step(UInt16(next))
                case .success:
                    completion(.failure(.invalidResponse("not a Find Information Response")))
                case .failure(.att(.attributeNotFound, _)):
                    completion(.success(found))
                case let .failure(error):
                    completion(.failure(error))
                }
            }
        }
        guard characteristic.valueHandle < end else { return completion(.success([])) }
        step(characteristic.valueHandle + 1)
    }

    /// Primary services (all, or those with the given UUIDs), their characteristics and their
    /// descriptors. The result is also kept in `services`.
    public func discoverAll(serviceUUIDs: [BluetoothUUID]? = nil,
                            completion: @escaping (Result<[GATTRemoteService], GATTError>) -> Void) {
        func discoverContents(_ services: [GATTRemoteService]) {
            self.discoverContents(of: services) { result in
                if case let .success(services) = result { self.services = services }
                completion(result)
            }
        }
        guard let uuids = serviceUUIDs else {
            return discoverPrimaryServices { result in
                switch result {
                case let .failure(error): completion(.failure(error))
                case let .success(services): discoverContents(services)
                }
            }
        }
        var services: [GATTRemoteService] = []
        func byUUID(_ k: Int) {
            guard k < uuids.count else { return discoverContents(services.sorted { $0.range.start < $1.range.start }) }
            discoverPrimaryServices(uuid: uuids[k]) { result in
                switch result {
                case let .failure(error): completion(.failure(error))
                case let .success(found):
                    services += found
                    byUUID(k + 1)
                }
            }
        }
        byUUID(0)
    }

    /// Re-discovers what a Service Changed indication says changed (Part G, 7.1 and 2.5.2): the
    /// services of `services` that overlap `range` are forgotten, and the primary services declared
    /// in `range` widened to cover them are discovered again, with their characteristics and
    /// descriptors. Completes with the services found there; `services` then holds the new view.
    public func rediscover(_ range: ATTHandleRange, completion: @escaping (Result<[GATTRemoteService], GATTError>) -> Void) {
        var start = range.start, end = range.end
        for s in services where s.range.start <= range.end && range.start <= s.range.end {
            start = min(start, s.range.start)
            end = max(end, s.range.end)
        }
        let widened = ATTHandleRange(start: max(start, 0x0001), end: end)
        discoverPrimaryServices(in: widened) { result in
            switch result {
            case let .failure(error): completion(.failure(error))
            case let .success(found):
                self.discoverContents(of: found) { result in
                    if case let .success(fresh) = result {
                        let kept = self.services.filter { $0.range.end < widened.start || widened.end < $0.range.start }
                        self.services = (kept + fresh).sorted { $0.range.start < $1.range.start }
                    }
                    completion(result)
                }
            }
        }
    }

    /// The characteristics and descriptors of each of `services`, in order.
    private func discoverContents(of services: [GATTRemoteService], completion: @escaping (Result<[GATTRemoteService], GATTError>) -> Void) {
        var services = services
        func service(_ s: Int) {
            guard s < services.count else {
                return completion(.success(services))
            }
            discoverCharacteristics(of: services[s]) { result in
                switch result {
                case let .failure(error): completion(.failure(error))
                case let .success(characteristics):
                    services[s].characteristics = characteristics
                    descriptor(s, 0)
                }
            }
        }
        func descriptor(_ s: Int, _ c: Int) {
            guard c < services[s].characteristics.count else { return service(s + 1) }
            discoverDescriptors(of: services[s].characteristics[c]) { result in
                switch result {
                case let .failure(error): completion(.failure(error))
                case let .success(descriptors):
                    services[s].characteristics[c].descriptors = descriptors
                    descriptor(s, c + 1)
                }
            }
        }
        service(0)
    }
}

extension GATTRemoteCharacteristic {
    /// Parses a characteristic declaration value (Part G, 3.3.1):
    ///
    ///     | Properties (1) | Value Handle (2) | Characteristic UUID (2 or 16) |
    ///
    /// The value handle must follow the declaration inside the service.
    /// What is wrong with a declaration value `init?(declarationHandle:value:serviceEnd:)` refuses
    /// (Core Vol 3 Part G 3.3.1: properties, value handle, then a 2- or 16-octet UUID).
    static func flaw(declarationHandle: UInt16, value: [UInt8], serviceEnd: UInt16) -> String {
        guard value.count == 5 || value.count == 19 else { return "its value has \(value.count) octets, not 5 or 19" }
        let valueHandle = UInt16(value[1]) | UInt16(value[2]) << 8
        if valueHandle <= declarationHandle { return "its value handle \(hex4(valueHandle)) is not after the declaration" }
        return "its value handle \(hex4(valueHandle)) is past its service's end, \(hex4(serviceEnd))"
    }

    init?(declarationHandle: UInt16, value: [UInt8], serviceEnd: UInt16) {
        guard value.count == 5 || value.count == 19 else { return nil }
        var reader = ByteReader(value)
        guard let properties = try? reader.readUInt8(), let valueHandle = try? reader.readUInt16LE(),
              let uuid = try? reader.readUUID(width: value.count - 3),
              valueHandle > declarationHandle, valueHandle <= serviceEnd else { return nil }
        self.init(uuid: uuid, properties: CharacteristicProperties(rawValue: properties), declarationHandle: declarationHandle,
                  valueHandle: valueHandle, endHandle: serviceEnd)
    }
}
