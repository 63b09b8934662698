import HostLink
import SMP

/// A central's and a peripheral's PairingSession joined back to back: each command is queued
/// and delivered in order (as on one link), and the central's LE Start Encryption succeeds when
/// the peripheral's session would answer the LTK Request with the same key, and fails as a MIC
/// failure (0x3D) would when it would not.
final class PairingHarness {
    let central: PairingSession
    let peripheral: PairingSession
    /// Every command, as (from central?, octets on the wire).
    var wire: [(fromCentral: Bool, octets: [UInt8])] = []
    var encryptedWith: [UInt8]?
    var centralOutcome: Result<PairingResult, PairingFailure>? { central.outcome }
    var peripheralOutcome: Result<PairingResult, PairingFailure>? { peripheral.outcome }
    var shown: [String: UInt32] = [:]
    private var queue: [(toCentral: Bool, octets: [UInt8])] = []
    /// A man in the middle: may change each command on its way (toCentral, octets) → octets.
    var tamper: ((Bool, [UInt8]) -> [UInt8])?

    static let centralAddress = SMPAddress(isRandom: true, octets: [0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6])
    static let peripheralAddress = SMPAddress(isRandom: false, octets: [0x00, 0x1B, 0xDC, 0x07, 0x31, 0x42])

    init(central centralSettings: SecuritySettings, peripheral peripheralSettings: SecuritySettings, seed: UInt64 = 1) {
        central = PairingSession(role: .initiator, settings: centralSettings, initiator: Self.centralAddress,
                                 responder: Self.peripheralAddress, random: Self.generator(seed: seed))
        peripheral = PairingSession(role: .responder, settings: peripheralSettings, initiator: Self.centralAddress,
                                    responder: Self.peripheralAddress, random: Self.generator(seed: seed &+ 1000))
        central.send = { [unowned self] pdu in self.queue.append((toCentral: false, octets: pdu.encoded)) }
        peripheral.send = { [unowned self] pdu in self.queue.append((toCentral: true, octets: pdu.encoded)) }
        central.onDisplayPasskey = { [unowned self] in self.shown["central passkey"] = $0 }
        peripheral.onDisplayPasskey = { [unowned self] in self.shown["peripheral passkey"] = $0 }
        central.onNumericComparison = { [unowned self] in self.shown["central number"] = $0 }
        peripheral.onNumericComparison = { [unowned self] in self.shown["peripheral number"] = $0 }
        central.startEncryption = { [unowned self] key, ediv, rand in
            let matches = self.peripheral.encryptionKey == key && ediv == 0 && rand == [UInt8](repeating: 0, count: 8)
            if matches { self.encryptedWith = key }
            self.central.encryptionChanged(status: matches ? 0 : 0x3D)
            self.peripheral.encryptionChanged(status: matches ? 0 : 0x3D)
        }
    }

    /// A deterministic source of octets (xorshift64*), as the lab's seeded generator is.
    static func generator(seed: UInt64) -> () -> UInt8 {
        var state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
        return {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return UInt8(truncatingIfNeeded: (state &* 0x2545_F491_4F6C_DD1D) >> 56)
        }
    }

    /// Starts the pairing and delivers commands until none is left.
    func run() {
        central.start()
        drain()
    }

    func drain() {
        while !queue.isEmpty {
            var next = queue.removeFirst()
            if let tamper { next.octets = tamper(next.toCentral, next.octets) }
            wire.append((fromCentral: !next.toCentral, octets: next.octets))
            (next.toCentral ? central : peripheral).receive(next.octets)
        }
    }

    /// The codes on the wire, in order, as "C>P 0x01" / "P>C 0x02".
    var codes: [String] {
        wire.map { ($0.fromCentral ? "C>P " : "P>C ") + "0x" + String(format2($0.octets[0])) }
    }

    func format2(_ v: UInt8) -> String { v < 16 ? "0" + String(v, radix: 16) : String(v, radix: 16) }

    var bothSucceeded: (central: PairingResult, peripheral: PairingResult)? {
        guard case let .success(c)? = centralOutcome, case let .success(p)? = peripheralOutcome else { return nil }
        return (c, p)
    }
}

extension SecuritySettings {
    static func make(io: IOCapability, mitm: Bool = false, sc: Bool = true, bonding: Bool = true, passkey: UInt32? = nil,
                     _ change: (inout SecuritySettings) -> Void = { _ in }) -> SecuritySettings {
        var settings = SecuritySettings()
        settings.io = io
        settings.mitm = mitm
        settings.secureConnections = sc
        settings.bonding = bonding
        settings.passkey = passkey
        change(&settings)
        return settings
    }
}
