import BLECrypto
import XCTest

/// Resolvable private addresses (Core Vol 6 Part B 1.3.2.2, 1.3.2.3) and the per-address
/// resolution cache, on the specification's sample data (Vol 3 Part H Appendix D.7).
final class PrivateAddressTests: XCTestCase {
    let irk: [UInt8] = [0xEC, 0x02, 0x34, 0xA3, 0x57, 0xC8, 0xAD, 0x05, 0x34, 0x10, 0x10, 0xA6, 0x0A, 0x39, 0x7D, 0x9B]

    func testMakeTakes22BitsSetsTheTopBitsAndHashesWithAh() throws {
        // prand 0x708194 is 0b01 followed by the 22 bits 0x308194; ah gives 0x0dfbaa.
        XCTAssertEqual(try ResolvablePrivateAddress.make(irk: irk, draw: { 0x30_8194 }), 0x7081_940D_FBAA)
        // A random part of all 0 or all 1 is drawn again (1.3.2.2).
        var draws: [UInt64] = [0, 0x3F_FFFF, 0xC0_0000, 0x30_8194]
        XCTAssertEqual(try ResolvablePrivateAddress.make(irk: irk, draw: { draws.removeFirst() }), 0x7081_940D_FBAA)
        XCTAssertTrue(draws.isEmpty, "four draws: all 0, all 1, all 0 in the low 22 bits, then a good one")
    }

    func testResolvesOnlyWithItsIRKAndOnlyTheResolvableForm() {
        XCTAssertTrue(ResolvablePrivateAddress.resolves(0x7081_940D_FBAA, with: irk))
        XCTAssertFalse(ResolvablePrivateAddress.resolves(0x7081_940D_FBAB, with: irk))
        XCTAssertFalse(ResolvablePrivateAddress.resolves(0x7081_940D_FBAA, with: irk.reversed()))
        XCTAssertFalse(ResolvablePrivateAddress.resolves(0x7081_940D_FBAA, with: []))
        // The same hash under top bits 0b11 (static) or 0b00 (non-resolvable) is no RPA.
        XCTAssertFalse(ResolvablePrivateAddress.resolves(0xF081_940D_FBAA, with: irk))
        XCTAssertFalse(ResolvablePrivateAddress.hasResolvableForm(0x3081_940D_FBAA))
        XCTAssertEqual(ResolvablePrivateAddress.prand(of: 0x7081_940D_FBAA), [0x70, 0x81, 0x94])
    }

    func testTheCacheResolvesEachAddressOnceUntilInvalidated() {
        var cache = RPAResolutionCache(capacity: 4)
        var asked = 0
        let irks = { () -> [[UInt8]] in asked += 1; return [Array(repeating: 1, count: 16), self.irk] }
        for _ in 0..<100 { XCTAssertEqual(cache.index(resolving: 0x7081_940D_FBAA, irks: irks), 1) }
        XCTAssertEqual(asked, 1)
        XCTAssertEqual(cache.misses, 1)
        XCTAssertEqual(cache.hits, 99)
        // A stranger's RPA is remembered as resolving nothing.
        XCTAssertNil(cache.index(resolving: 0x4000_0000_0001, irks: irks))
        XCTAssertNil(cache.index(resolving: 0x4000_0000_0001, irks: irks))
        XCTAssertEqual(asked, 2)
        // An address without the resolvable form never asks.
        XCTAssertNil(cache.index(resolving: 0xC000_0000_0001, irks: irks))
        XCTAssertEqual(asked, 2)
        // The keys changed: answers are stale.
        cache.invalidate()
        XCTAssertNil(cache.index(resolving: 0x7081_940D_FBAA, irks: { asked += 1; return [] }))
        XCTAssertEqual(asked, 3)
        // Full: it starts afresh rather than grow.
        for k in 0..<10 { _ = cache.index(resolving: 0x4000_0000_0010 + UInt64(k), irks: { [] }) }
        XCTAssertEqual(cache.index(resolving: 0x7081_940D_FBAA, irks: irks), 1, "forgotten, resolved again")
    }
}
