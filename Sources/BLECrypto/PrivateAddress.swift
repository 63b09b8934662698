/// Resolvable private addresses (Core Vol 6 Part B 1.3.2.2 and 1.3.2.3; Vol 3 Part C 10.8.2.3),
/// the one implementation the host (GAP's privacy) and the sim's controller (its resolving list)
/// share. An address here is the 48-bit BD_ADDR as a number, its most significant bit first as
/// the specification draws it: the 24-bit `prand` (its two top bits 0b01) in the upper half,
/// `hash = ah(IRK, prand)` in the lower. Whether the address is random (Address_Type 0x01) is
/// the caller's to check: a public address can have any bits.
public enum ResolvablePrivateAddress {
    /// Whether the 48-bit `address` has the form of a resolvable private address: its two most
    /// significant bits 0b01 (1.3.2.2).
    public static func hasResolvableForm(_ address: UInt64) -> Bool {
        (address >> 46) & 0b11 == 0b01
    }

    /// The three octets of `address`'s prand, most significant first (what ah takes).
    public static func prand(of address: UInt64) -> [UInt8] {
        [UInt8(address >> 40 & 0xFF), UInt8(address >> 32 & 0xFF), UInt8(address >> 24 & 0xFF)]
    }

    /// An RPA for `irk` (16 octets, most significant first). `draw` gives candidate random
    /// parts: its low 22 bits are taken, and a candidate whose 22 bits are all 0 or all 1 is
    /// drawn again (1.3.2.2: "at least one bit of the random part shall be 0 and one shall be
    /// 1"). The two top bits are then set to 0b01.
    public static func make(irk: [UInt8], draw: () -> UInt64) throws -> UInt64 {
        var bits: UInt64
        repeat { bits = draw() & 0x3F_FFFF } while bits == 0 || bits == 0x3F_FFFF
        let upper = (bits | 0x40_0000) << 24
        let hash = try SecurityToolbox.ah(irk, prand(of: upper))
        return upper | UInt64(hash[0]) << 16 | UInt64(hash[1]) << 8 | UInt64(hash[2])
    }

    /// Whether `address` was made with `irk` (1.3.2.3: the hash recomputed from its prand
    /// equals its hash). False for an address without the resolvable form, or an IRK that is
    /// not 16 octets.
    public static func resolves(_ address: UInt64, with irk: [UInt8]) -> Bool {
        guard hasResolvableForm(address), irk.count == 16 else { return false }
        guard let hash = try? SecurityToolbox.ah(irk, prand(of: address)) else { return false }
        return UInt64(hash[0]) << 16 | UInt64(hash[1]) << 8 | UInt64(hash[2]) == address & 0xFF_FFFF
    }
}

/// Remembers which IRK of a list resolves each address, so that an address heard again (every
/// advertising report of a device, while its RPA lasts) costs a dictionary look-up, not an AES
/// per IRK. Addresses no IRK resolves are remembered too: most advertisers are strangers.
///
/// The owner calls `invalidate()` whenever its list of IRKs changes (a bond stored or
/// forgotten, a resolving list entry added or removed): the cached answers are then stale. The
/// cache keeps at most `capacity` addresses and starts afresh when full, so that a crowd of
/// rotating advertisers cannot grow it without bound.
public struct RPAResolutionCache {
    public let capacity: Int
    private var answers: [UInt64: Int] = [:]
    /// Look-ups answered from the cache, and those that ran ah (for tests and benchmarks).
    public private(set) var hits = 0
    public private(set) var misses = 0

    public init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    /// The index in `irks()` of the first IRK that resolves `address`, or nil. `irks` is asked
    /// only when the cache does not know the address.
    public mutating func index(resolving address: UInt64, irks: () -> [[UInt8]]) -> Int? {
        guard ResolvablePrivateAddress.hasResolvableForm(address) else { return nil }
        if let known = answers[address] {
            hits += 1
            return known < 0 ? nil : known
        }
        misses += 1
        let found = irks().firstIndex { ResolvablePrivateAddress.resolves(address, with: $0) }
        if answers.count >= capacity { answers.removeAll(keepingCapacity: true) }
        answers[address] = found ?? -1
        return found
    }

    /// Forgets every answer (the list of IRKs changed).
    public mutating func invalidate() {
        answers.removeAll(keepingCapacity: true)
    }
}
