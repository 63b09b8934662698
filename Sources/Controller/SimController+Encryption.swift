import BLECrypto
import HCI

// The encryption commands (Core 5.4, Vol 4, Part E, 7.8.22–7.8.26). The procedure itself runs on
// the link (SimLink+Encryption.swift).

extension SimController {
    /// LE Encrypt (7.8.22): AES-128 of Plaintext_Data under Key. On HCI both travel least
    /// significant octet first; AES (FIPS-197) takes the most significant first.
    func encrypt(key: [UInt8], plaintext: [UInt8]) {
        guard let encrypted = try? SecurityToolbox.e(key.reversed(), plaintext.reversed()) else {
            sendCommandComplete(.leEncrypt, [HCIStatus.unspecifiedError.rawValue] + [UInt8](repeating: 0, count: 16))
            return
        }
        sendCommandComplete(.leEncrypt, [HCIStatus.success.rawValue] + encrypted.reversed())
    }

    /// LE Enable Encryption (7.8.24): only a central starts encryption, on a link of its own
    /// with no procedure of that kind under way (Command Disallowed, 0x0C, otherwise).
    func enableEncryption(handle: UInt16, random: [UInt8], ediv: UInt16, key: [UInt8]) -> HCIStatus {
        guard let entry = linkEntry(handle: handle) else { return .unknownConnectionIdentifier }
        guard entry.isCentral, entry.link.encryption == nil else { return .commandDisallowed }
        // Random_Number and Long_Term_Key arrive least significant octet first; the link keeps
        // them most significant first, as the peripheral's host will give its key.
        entry.link.centralStartsEncryption(rand: random.reversed(), ediv: ediv, key: key.reversed())
        return .success
    }

    /// LE Long Term Key Request Reply / Negative Reply (7.8.25, 7.8.26): Command Complete with
    /// Status and Connection_Handle; Command Disallowed when no request waits on that link.
    func answerKeyRequest(_ opcode: HCIOpcode, handle: UInt16, key: [UInt8]?) {
        let status: HCIStatus
        if let entry = linkEntry(handle: handle) {
            if !entry.isCentral, entry.link.isAwaitingPeripheralKey {
                entry.link.peripheralHostAnswers(key: key.map { Array($0.reversed()) })
                status = .success
            } else {
                status = .commandDisallowed
            }
        } else {
            status = .unknownConnectionIdentifier
        }
        sendCommandComplete(opcode, [status.rawValue, UInt8(truncatingIfNeeded: handle), UInt8(truncatingIfNeeded: handle >> 8)])
    }
}
