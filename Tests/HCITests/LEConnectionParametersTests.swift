@testable import HCI
import XCTest

/// `connectionParametersAreValid` (Core 5.4, Vol 4, Part E, 7.8.12 and 7.8.18): interval 0x0006–0x0C80,
/// min ≤ max, latency ≤ 0x01F3, timeout 0x000A–0x0C80, and timeout (ms) > (1 + latency) × interval_max (ms) × 2.
final class LEConnectionParametersTests: XCTestCase {

    func testTheReferenceCentralsParametersAreValid() throws {
        // central #37 LE Create Connection: 15–30 ms, latency 0, timeout 720 ms.
        guard case let .leCreateConnection(p) = try HCIPacket(h4: ReferenceTraffic.central[36].h4).command else {
            return XCTFail("central #37 is not LE Create Connection")
        }
        XCTAssertTrue(connectionParametersAreValid(intervalMin: p.connectionIntervalMin, intervalMax: p.connectionIntervalMax,
                                                   latency: p.maxLatency, timeout: p.supervisionTimeout))
    }

    func testRanges() {
        XCTAssertTrue(connectionParametersAreValid(intervalMin: 0x0006, intervalMax: 0x0006, latency: 0, timeout: 0x000A))
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0005, intervalMax: 0x0006, latency: 0, timeout: 0x000A))
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0006, intervalMax: 0x0C81, latency: 0, timeout: 0x0C80))
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0020, intervalMax: 0x0010, latency: 0, timeout: 0x0100),
                       "min above max")
        XCTAssertTrue(connectionParametersAreValid(intervalMin: 0x0006, intervalMax: 0x0006, latency: 0x01F3, timeout: 0x0C80))
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0006, intervalMax: 0x0006, latency: 0x01F4, timeout: 0x0C80))
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0006, intervalMax: 0x0006, latency: 0, timeout: 0x0009))
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0006, intervalMax: 0x0006, latency: 0, timeout: 0x0C81))
    }

    func testSupervisionTimeoutMustStrictlyExceedTwiceTheEffectiveInterval() {
        // interval_max 4 s, latency 0: 2 × 4 s = 8 s, so 8.00 s (0x0320) is too short and 8.01 s is enough.
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0C80, intervalMax: 0x0C80, latency: 0, timeout: 0x0320))
        XCTAssertTrue(connectionParametersAreValid(intervalMin: 0x0C80, intervalMax: 0x0C80, latency: 0, timeout: 0x0321))
        // interval_max 50 ms, latency 4: (1 + 4) × 50 ms × 2 = 500 ms.
        XCTAssertFalse(connectionParametersAreValid(intervalMin: 0x0028, intervalMax: 0x0028, latency: 4, timeout: 50))
        XCTAssertTrue(connectionParametersAreValid(intervalMin: 0x0028, intervalMax: 0x0028, latency: 4, timeout: 51))
    }
}

extension HCIPacket {
    var command: HCICommand? {
        if case let .command(c) = self { return c }
        return nil
    }
}
