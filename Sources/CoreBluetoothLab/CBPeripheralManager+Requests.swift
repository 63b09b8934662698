import ATT
import Foundation
import GAP
import GATT

/// Reads, writes and value updates of a peripheral manager's characteristics.
extension CBPeripheralManager {
    /// A characteristic without a cached value: every read and write of its value goes to the
    /// delegate, and the ATT request waits for `respond(to:withResult:)`.
    func installHandlers(for characteristic: CBMutableCharacteristic, valueHandle: UInt16) {
        server?.setReadHandler({ [weak self, weak characteristic] request, respond in
            guard let self, let characteristic, let central = self.central(for: request.connection.bearer) else {
                return respond(.error(.unlikelyError))
            }
            guard characteristic.permissions.contains(.readable) else { return respond(.error(.readNotPermitted)) }
            let offset = request.offset
            let attRequest = CBATTRequest(central: central, characteristic: characteristic, offset: offset, value: nil)
            attRequest.answer = { [weak attRequest] code in
                guard code == .success else { return respond(.error(self.attErrorCode(for: code))) }
                // The server takes the part from the offset on: pad what the app gave for it.
                let part = attRequest?.value.map { [UInt8]($0) } ?? []
                respond(.value([UInt8](repeating: 0, count: offset) + part))
            }
            self.deliver { $0.peripheralManager(self, didReceiveRead: attRequest) }
        }, forHandle: valueHandle)

        server?.setWriteHandler({ [weak self, weak characteristic] request, respond in
            guard let self, let characteristic, let central = self.central(for: request.connection.bearer) else {
                return respond(.error(.unlikelyError))
            }
            guard characteristic.permissions.contains(.writeable) else { return respond(.error(.writeNotPermitted)) }
            let attRequest = CBATTRequest(central: central, characteristic: characteristic, offset: 0, value: Data(request.value))
            if request.method == .command {
                // A Write Command is never answered; the delegate hears of it all the same.
                respond(.accept)
            } else {
                attRequest.answer = { [weak self] code in
                    respond(code == .success ? .accept : .error(self?.attErrorCode(for: code) ?? .unlikelyError))
                }
            }
            self.deliver { $0.peripheralManager(self, didReceiveWrite: [attRequest]) }
        }, forHandle: valueHandle)
    }

    /// The ATT Error Code an answer sends: the code's own octet (application errors 0x80–0x9F
    /// included); a code outside 0x01–0xFF cannot be sent, and goes as Unlikely Error with a warning.
    func attErrorCode(for code: CBATTError.Code) -> ATTErrorCode {
        if let octet = code.attErrorCode { return octet }
        misuse("respond(to:withResult:) with \(code), which is no ATT Error Code (0x01-0xFF) - answering Unlikely Error (0x0E)")
        return .unlikelyError
    }

    /// Responds to a read or write request from a connected central: `.success`, or the ATT
    /// error to send. For a write, respond to the first request of `didReceiveWrite`. Only the
    /// first response to a request counts.
    public func respond(to request: CBATTRequest, withResult result: CBATTError.Code) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let answer = request.answer else { return }
        request.answer = nil
        answer(result)
    }

    /// Sends an updated characteristic value to subscribed centrals (nil: all of them), as a
    /// notification, or an indication to a central that enabled only indications.
    ///
    /// Returns false, sending nothing, when the transmit queue of a target link is full; the
    /// delegate then hears `peripheralManagerIsReady(toUpdateSubscribers:)` when there is room.
    /// Values longer than a central's `maximumUpdateValueLength` are truncated.
    public func updateValue(_ value: Data, for characteristic: CBMutableCharacteristic, onSubscribedCentrals centrals: [CBCentral]?) -> Bool {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn, let server, let valueHandle = valueHandle(of: characteristic) else {
            misuse("updateValue(_:for:onSubscribedCentrals:) for a characteristic that is not published")
            return false
        }
        let targets = (characteristic.subscribedCentrals ?? []).filter { central in
            centrals?.contains { $0.identifier == central.identifier } ?? true
        }
        let limit = cbLab?.transmitQueueLimit ?? Int.max
        let links = targets.compactMap(\.connection)
        // Full: ACL fragments waiting for controller buffers, or indications waiting for the
        // confirmation of the one outstanding (Core 5.4 Vol 3 Part F 3.4.7.2).
        if links.contains(where: { $0.link.queuedFragments >= limit || $0.bearer.queuedIndicationCount >= limit }) {
            waitsForUpdateRoom = true
            return false
        }
        let bytes = [UInt8](value)
        for connection in links {
            let configuration = connection.serverConnection.configuration(forValueHandle: valueHandle)
            if configuration.contains(.notification) {
                server.notify(bytes, handle: valueHandle, to: connection.serverConnection)
            } else if configuration.contains(.indication) {
                server.indicate(bytes, handle: valueHandle, to: connection.serverConnection)
            }
        }
        return true
    }

    /// An ACL fragment left the host: owe `peripheralManagerIsReady` once the link has room.
    func aclSent(handle: UInt16, stillQueued: Int) {
        guard waitsForUpdateRoom, stillQueued < (cbLab?.transmitQueueLimit ?? 0) else { return }
        waitsForUpdateRoom = false
        later { $0.peripheralManagerIsReady(toUpdateSubscribers: self) }
    }
}
