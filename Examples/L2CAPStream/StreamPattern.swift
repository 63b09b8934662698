// The bytes the sender streams and the receiver checks: a pattern that depends on each byte's
// offset, so that a lost, repeated or reordered byte anywhere shows at its own offset.

import Foundation

public enum StreamPattern {
    /// The service the receiver advertises and whose characteristic tells the PSM.
    public static let serviceUUIDString = "6E1A0001-5A5C-4C3B-9D2E-7F0C2B1A4D00"

    /// The byte at `offset`: its low 8 bits mixed with the next 8, so that runs of 256 differ.
    @inline(__always)
    public static func byte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset &* 31 &+ (offset >> 8) &* 7 &+ (offset >> 16))
    }

    /// `count` bytes of the pattern from `offset` on.
    public static func bytes(from offset: Int, count: Int) -> [UInt8] {
        (offset..<(offset + count)).map(byte(at:))
    }
}
