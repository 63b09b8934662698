/// A small, fast, seeded generator (xoshiro256**, seeded through SplitMix64) so that every random
/// choice in a lab follows from its seed. Streams derived with a label are independent of each
/// other, so adding a device does not change another device's draws.
public struct SeededRandom: RandomNumberGenerator {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

    public init(seed: UInt64) {
        var sm = seed
        func next() -> UInt64 {
            sm &+= 0x9E37_79B9_7F4A_7C15
            var z = sm
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = next(); s1 = next(); s2 = next(); s3 = next()
    }

    /// A generator for one component, derived from the lab's seed and a stable label.
    public init(seed: UInt64, stream label: String) {
        self.init(seed: seed, streamUTF8: label.utf8)
    }

    /// The generator `init(seed:stream:)` makes for the label whose UTF-8 encoding is `label`:
    /// for callers that compose labels as bytes without making a String (one per device of a
    /// crowd of thousands).
    public init<Label: Sequence>(seed: UInt64, streamUTF8 label: Label) where Label.Element == UInt8 {
        // FNV-1a of the label: stable across runs and platforms (unlike Hasher).
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in label { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        self.init(seed: seed ^ h)
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    @inline(__always) private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// Uniform in `range` (both ends included).
    public mutating func int(in range: ClosedRange<Int64>) -> Int64 {
        let width = UInt64(bitPattern: range.upperBound &- range.lowerBound) &+ 1
        if width == 0 { return Int64(bitPattern: next()) }
        return range.lowerBound &+ Int64(bitPattern: next() % width)
    }
}
