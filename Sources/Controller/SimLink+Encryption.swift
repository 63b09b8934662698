import BLERuntime
import HCI

// The Encryption Start and Encryption Pause procedures (Core 5.4, Vol 6, Part B, 5.1.3.1 and
// 5.1.3.2) on a sim link, event by event:
//
//   central host: LE Enable Encryption (Vol 4 Part E 7.8.24) → Command Status
//   event k:   central LL_ENC_REQ (Rand, EDIV, SKDm, IVm); peripheral LL_ENC_RSP (SKDs, IVs), and
//              its host gets LE Long Term Key Request (7.7.65.5)
//   peripheral host: LE Long Term Key Request Reply (7.8.25) with a key
//   event k+n: peripheral LL_START_ENC_REQ
//   event k+m: central LL_START_ENC_RSP (encrypted with the central's key); the peripheral checks
//              its MIC and answers LL_START_ENC_RSP; both hosts get Encryption Change (7.7.8), or
//              Encryption Key Refresh Complete (7.7.39) when the link was encrypted already
//
// A Negative Reply (7.8.26), or a peripheral host that masked the LTK Request event, makes the
// peripheral answer LL_REJECT_EXT_IND with PIN or Key Missing (0x06): the central's host gets
// Encryption Change with that status and the link stays as it was (unencrypted). Keys that differ
// on the two ends mean the peripheral cannot authenticate the central's LL_START_ENC_RSP: it
// leaves the connection with Connection Terminated due to MIC Failure (0x3D), and the central,
// which hears nothing more, times out (0x08).
//
// A link already encrypted pauses first (LL_PAUSE_ENC_REQ/RSP, 5.1.3.2), in the same event as the
// new LL_ENC_REQ. While a procedure runs no data PDU goes either way (5.1.3.1: the central stops
// before LL_ENC_REQ, the peripheral after LL_ENC_RSP, until LL_START_ENC_RSP); the hosts' packets
// wait in the controllers' buffers. The air capture shows the PDUs as they are; payloads after
// encryption are written in clear (the sim does not run AES-CCM on its air).

extension SimLink {
    enum Encryption: Equatable {
        /// The central's LL_ENC_REQ (after LL_PAUSE_ENC_REQ for a refresh) waits for an event.
        case requestPending(rand: [UInt8], ediv: UInt16, key: [UInt8], refresh: Bool)
        /// The peripheral's host was asked for the key and has not answered.
        case awaitingPeripheralHost(rand: [UInt8], ediv: UInt16, key: [UInt8], refresh: Bool)
        /// The peripheral's LL_START_ENC_REQ waits for an event; `keysMatch`: both ends' keys are equal.
        case startPending(keysMatch: Bool, refresh: Bool)
        /// The central's LL_START_ENC_RSP waits for an event.
        case startResponsePending(keysMatch: Bool, refresh: Bool)
        /// The peripheral's LL_REJECT_EXT_IND (PIN or Key Missing) waits for an event.
        case rejectPending
    }

    /// Whether the peripheral's host has been asked and not answered (for the reply commands).
    var isAwaitingPeripheralKey: Bool {
        if case .awaitingPeripheralHost? = encryption { return true }
        return false
    }

    /// Data waits while a procedure runs, except before the central's LL_ENC_REQ has gone.
    var encryptionPausesData: Bool {
        guard let encryption else { return false }
        if case .requestPending = encryption { return false }
        return true
    }

    /// Which ends have an encryption PDU to send at the next event.
    var encryptionSenders: (central: Bool, peripheral: Bool) {
        switch encryption {
        case .requestPending?, .startResponsePending?: return (true, false)
        case .startPending?, .rejectPending?: return (false, true)
        case .awaitingPeripheralHost?, nil: return (false, false)
        }
    }

    /// LE Enable Encryption on the central (7.8.24): the procedure starts at the next event.
    func centralStartsEncryption(rand: [UInt8], ediv: UInt16, key: [UInt8]) {
        encryption = .requestPending(rand: rand, ediv: ediv, key: key, refresh: isEncrypted)
        scheduleNextEvent()
    }

    /// The peripheral's host answered the LTK Request: with a key (Reply) or none (Negative Reply).
    func peripheralHostAnswers(key: [UInt8]?) {
        guard case let .awaitingPeripheralHost(_, _, centralKey, refresh)? = encryption else { return }
        if let key {
            encryption = .startPending(keysMatch: key == centralKey && faults.encryption != .micFailure, refresh: refresh)
        } else {
            encryption = .rejectPending
        }
        scheduleNextEvent()
    }

    /// The encryption part of event `k`, after the other procedures: one PDU of the side whose
    /// turn it is (taking a slot of its budget), and its answer in the same event when the other
    /// side has one. Returns false when the event ended the connection (a MIC failure).
    @discardableResult
    func runEncryption(at k: Int64, budgets: inout (central: Int, peripheral: Int)) -> Bool {
        guard let procedure = encryption else { return true }
        switch procedure {
        case let .requestPending(rand, ediv, key, refresh):
            guard budgets.central > 0 else { return true }
            budgets.central -= 1
            if refresh {
                observeEncryption(.pauseEncryptionRequest, fromCentral: true, acknowledged: true, at: k)
                observeEncryption(.pauseEncryptionResponse, fromCentral: false, acknowledged: true, at: k)
                isEncrypted = false
            }
            var random = central.encryptionRandom
            let skdm = Self.octets(8, &random), ivm = Self.octets(4, &random)
            central.encryptionRandom = random
            let arrives = controlPDUArrives(fromCentral: true)
            observeEncryption(.encryptionRequest(rand: rand.reversed(), ediv: ediv, skd: skdm, iv: ivm), fromCentral: true,
                              acknowledged: arrives, at: k)
            guard arrives else { return true }   // resent at the next event
            var peripheralRandom = peripheral.encryptionRandom
            let skds = Self.octets(8, &peripheralRandom), ivs = Self.octets(4, &peripheralRandom)
            peripheral.encryptionRandom = peripheralRandom
            budgets.peripheral -= 1
            observeEncryption(.encryptionResponse(skd: skds, iv: ivs), fromCentral: false, acknowledged: true, at: k)
            encryption = .awaitingPeripheralHost(rand: rand, ediv: ediv, key: key, refresh: refresh)
            // 7.7.65.5: Random_Number and Encrypted_Diversifier as LL_ENC_REQ carried them. A host
            // that masked the event cannot answer: its link layer refuses at once.
            if faults.encryption == .keyMissing {
                encryption = .rejectPending
            } else if peripheral.wants(leMetaBit: EventMask.leLongTermKeyRequest) {
                peripheral.sendLEMeta(.longTermKeyRequest(handle: peripheralHandle, random: rand.reversed(), ediv: ediv),
                                      bit: EventMask.leLongTermKeyRequest)
            } else {
                encryption = .rejectPending
            }
        case let .startPending(keysMatch, refresh):
            guard budgets.peripheral > 0 else { return true }
            budgets.peripheral -= 1
            let arrives = controlPDUArrives(fromCentral: false)
            observeEncryption(.startEncryptionRequest, fromCentral: false, acknowledged: arrives, at: k)
            guard arrives else { return true }
            encryption = .startResponsePending(keysMatch: keysMatch, refresh: refresh)
        case let .startResponsePending(keysMatch, refresh):
            guard budgets.central > 0 else { return true }
            budgets.central -= 1
            let arrives = controlPDUArrives(fromCentral: true)
            observeEncryption(.startEncryptionResponse, fromCentral: true, acknowledged: arrives && keysMatch, at: k)
            guard arrives else { return true }
            encryption = nil
            guard keysMatch else {
                // The peripheral cannot authenticate the PDU (5.1.3.1, 4.6.6 of Part E's error codes).
                leave(central: false, reason: .connectionTerminatedMICFailure)
                return false
            }
            budgets.peripheral -= 1
            observeEncryption(.startEncryptionResponse, fromCentral: false, acknowledged: true, at: k)
            isEncrypted = true
            reportEncryption(to: peripheral, handle: peripheralHandle, status: .success, refresh: refresh)
            reportEncryption(to: central, handle: centralHandle, status: .success, refresh: refresh)
        case .rejectPending:
            guard budgets.peripheral > 0 else { return true }
            budgets.peripheral -= 1
            let arrives = controlPDUArrives(fromCentral: false)
            observeEncryption(.rejectExtended(rejectOpcode: 0x03, errorCode: HCIStatus.pinOrKeyMissing.rawValue), fromCentral: false,
                              acknowledged: arrives, at: k)
            guard arrives else { return true }
            encryption = nil
            isEncrypted = false
            reportEncryption(to: central, handle: centralHandle, status: .pinOrKeyMissing, refresh: false)
        case .awaitingPeripheralHost:
            break
        }
        return true
    }

    /// Encryption Change (on) or, for a refresh, Encryption Key Refresh Complete; an error is
    /// always Encryption Change with Encryption_Enabled 0x00.
    private func reportEncryption(to controller: SimController, handle: UInt16, status: HCIStatus, refresh: Bool) {
        if refresh && status == .success {
            controller.sendMaskedEvent(.encryptionKeyRefreshComplete(status: status, handle: handle), bit: EventMask.encryptionKeyRefreshComplete)
        } else {
            controller.sendMaskedEvent(.encryptionChange(EncryptionChange(status: status, handle: handle,
                                                                          encryptionEnabled: status == .success ? 1 : 0)),
                                       bit: EventMask.encryptionChange)
        }
    }

    private func observeEncryption(_ pdu: LLControlPDU, fromCentral: Bool, acknowledged: Bool, at k: Int64) {
        guard air.observer != nil else { return }
        air.observe(.control(link: airNumber, fromCentral: fromCentral, pdu: pdu, acknowledged: acknowledged, event: k,
                             rssi: air.sniffedRSSI(fromCentral ? central : peripheral)))
    }

    static func octets(_ count: Int, _ random: inout SeededRandom) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }
}
