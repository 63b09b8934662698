import FuzzSupport
import SMP

/// The Security Manager's commands and a pairing (SMPPDU, PairingSession). The first message's
/// octets choose both devices' settings (IO capabilities, Secure Connections, MITM, key sizes,
/// OOB, passkeys); then a real pairing runs between an initiator and a responder, and message i
/// (when not empty) replaces the i-th command on the wire, in either direction. So the fuzzer
/// reaches every stage of every method with real values before it breaks one, and a malformed or
/// out-of-sequence command meets each state.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let messages = fuzzMessages(data, size)
    guard let choice = messages.first, !choice.isEmpty else { return 0 }
    func octet(_ i: Int) -> UInt8 { i < choice.count ? choice[i] : 0 }
    func settings(_ a: UInt8, _ b: UInt8) -> SecuritySettings {
        var s = SecuritySettings()
        s.io = IOCapability(rawValue: a % 5) ?? .noInputNoOutput
        s.secureConnections = a & 0x08 != 0
        s.mitm = a & 0x10 != 0
        s.bonding = a & 0x20 != 0
        s.debugKey = a & 0x40 != 0
        s.pairable = a & 0x80 == 0 || b & 0x80 == 0
        s.maxKeySize = 7 + b % 10
        s.minKeySize = 7 + (b >> 4) % 10
        s.passkey = b & 0x01 != 0 ? UInt32(b) * 3_907 : nil
        s.confirmsNumericComparison = b & 0x02 == 0
        if b & 0x04 != 0 { s.oob = OOBData(legacyTK: [UInt8](repeating: b, count: 16), localRandom: [UInt8](repeating: a, count: 16)) }
        if b & 0x08 != 0 { s.identity = SecurityIdentity(irk: [UInt8](repeating: a ^ b, count: 16), address: SMPAddress(isRandom: false, octets: [1, 2, 3, 4, 5, 6])) }
        if b & 0x40 != 0 { s.csrk = [UInt8](repeating: b, count: 16) }
        return s
    }
    var state: UInt64 = UInt64(octet(4)) << 8 | UInt64(octet(5)) | 1
    let random: () -> UInt8 = {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
    let a = SMPAddress(isRandom: true, octets: [0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6])
    let b = SMPAddress(isRandom: false, octets: [0x00, 0x1B, 0xDC, 0x07, 0x31, 0x42])
    let initiator = PairingSession(role: .initiator, settings: settings(octet(0), octet(1)), initiator: a, responder: b, random: random)
    let responder = PairingSession(role: .responder, settings: settings(octet(2), octet(3)), initiator: a, responder: b, random: random)
    var queue: [(toResponder: Bool, octets: [UInt8])] = []
    initiator.send = { queue.append((true, $0.encoded)) }
    responder.send = { queue.append((false, $0.encoded)) }
    initiator.onViolation = { _ = $0.count }
    responder.onViolation = { _ = $0.count }
    initiator.startEncryption = { [unowned initiator, unowned responder] key, ediv, rand in
        let status: UInt8 = responder.encryptionKey == key && ediv == 0 && rand.allSatisfy({ $0 == 0 }) ? 0 : 0x3D
        initiator.encryptionChanged(status: status)
        responder.encryptionChanged(status: status)
    }
    initiator.start()
    var index = 1
    var steps = 0
    while !queue.isEmpty, steps < 400 {
        steps += 1
        var next = queue.removeFirst()
        if index < messages.count {
            if !messages[index].isEmpty { next.octets = messages[index] }
            index += 1
        }
        if let pdu = try? SMPPDU.decode(next.octets) { _ = pdu.encoded }
        (next.toResponder ? responder : initiator).receive(next.octets)
    }
    // What is left of the input goes to both, out of any sequence.
    for message in messages.dropFirst(index) {
        responder.receive(message)
        initiator.receive(message)
    }
    initiator.timedOut()
    responder.timedOut()
    return 0
}
