import XCTest
import BLERuntime

final class TimeTests: XCTestCase {

    // MARK: TimeSpan

    func testUnitsAreNanoseconds() {
        XCTAssertEqual(TimeSpan.nanoseconds(5).nanoseconds, 5)
        XCTAssertEqual(TimeSpan.microseconds(625).nanoseconds, 625_000)
        XCTAssertEqual(TimeSpan.milliseconds(30).nanoseconds, 30_000_000)
        XCTAssertEqual(TimeSpan.seconds(2).nanoseconds, 2_000_000_000)
        XCTAssertEqual(TimeSpan.seconds(1.25).nanoseconds, 1_250_000_000)
        XCTAssertEqual(TimeSpan.seconds(0.0075).nanoseconds, 7_500_000, "rounded, not truncated")
        XCTAssertEqual(TimeSpan.zero.nanoseconds, 0)
    }

    func testArithmeticAndComparison() {
        // A 7.5 ms connection interval (Core 5.4, Vol 6, Part B, 4.5.1: a multiple of 1.25 ms).
        let unit = TimeSpan.microseconds(1_250)
        XCTAssertEqual(unit * 6, .microseconds(7_500))
        XCTAssertEqual(unit * 6 / 3, .microseconds(2_500))
        XCTAssertEqual(.milliseconds(10) - .microseconds(2_500), TimeSpan.microseconds(7_500))
        XCTAssertEqual(.milliseconds(1) + .microseconds(1), TimeSpan.microseconds(1_001))
        XCTAssertLessThan(TimeSpan.microseconds(999), .milliseconds(1))
        XCTAssertGreaterThan(TimeSpan.zero, .nanoseconds(-1))
        XCTAssertEqual(TimeSpan.milliseconds(1_500).seconds, 1.5)
        XCTAssertEqual(TimeSpan.microseconds(7_500).milliseconds, 7.5)
    }

    func testDescriptionsAreCompact() {
        let cases: [(TimeSpan, String)] = [
            (.zero, "0s"),
            (.microseconds(7_500), "7.5ms"),
            (.milliseconds(1_250), "1.25s"),
            (.microseconds(625), "625µs"),
            (.nanoseconds(500), "500ns"),
            (.nanoseconds(1), "1ns"),
            (.seconds(30), "30s"),
            (.milliseconds(1), "1ms"),
            (.milliseconds(1_001), "1.001s"),
            (.nanoseconds(1_500), "1.5µs"),
            (.seconds(3_600), "3600s"),
            (.microseconds(-1_500), "-1.5ms"),
            (.nanoseconds(-7), "-7ns"),
            // Three decimals at most: the fourth is rounded away.
            (.nanoseconds(1_234_567), "1.235ms"),
        ]
        for (span, text) in cases {
            XCTAssertEqual(span.description, text, "\(span.nanoseconds) ns")
        }
    }

    func testDescriptionsMoveUpAUnitWhenRoundingReachesAThousand() {
        // 999.9996 ms rounds to 1000.000 at three decimals; it should read as the next unit.
        XCTAssertEqual(TimeSpan.nanoseconds(999_999_600).description, "1s")
        XCTAssertEqual(TimeSpan.nanoseconds(999_999_6).description, "10ms")
        XCTAssertEqual(TimeSpan.nanoseconds(-999_999_600).description, "-1s")
        XCTAssertEqual(TimeSpan.nanoseconds(999_999).description, "999.999µs", "exact: nothing to round")
        XCTAssertEqual(TimeSpan.nanoseconds(999_499_999).description, "999.5ms")
    }

    func testDescriptionsRoundHalfUpExactly() {
        // Decided in integers: 1.0005 s is not 1000.4999… thousandths as it would be in floating point.
        XCTAssertEqual(TimeSpan.nanoseconds(1_000_500_000).description, "1.001s")
        XCTAssertEqual(TimeSpan.nanoseconds(1_000_499_999).description, "1s")
        XCTAssertEqual(TimeSpan.nanoseconds(2_007_500).description, "2.008ms")
        XCTAssertEqual(TimeSpan.nanoseconds(-2_007_500).description, "-2.008ms", "half away from zero")
        XCTAssertEqual(TimeSpan.nanoseconds(1_050).description, "1.05µs")
        XCTAssertEqual(TimeSpan.nanoseconds(1_005_000).description, "1.005ms", "inner zeros kept")
    }

    func testDescriptionsAtTheExtremes() {
        // Far beyond a double's 53 bits of exact nanoseconds, and the one value whose magnitude has no Int64.
        XCTAssertEqual(TimeSpan.nanoseconds(.max).description, "9223372036.855s")
        XCTAssertEqual(TimeSpan.nanoseconds(.min).description, "-9223372036.855s")
        XCTAssertEqual(TimeSpan.seconds(86_400 * 365).description, "31536000s")
        XCTAssertEqual(Instant.distantFuture.description, "9223372036.855s")
    }

    // MARK: Instant

    func testInstantArithmetic() {
        let start = Instant.zero + .milliseconds(100)
        XCTAssertEqual(start.nanoseconds, 100_000_000)
        XCTAssertEqual(start + TimeSpan.milliseconds(50) - start, .milliseconds(50))
        XCTAssertEqual(start - TimeSpan.milliseconds(100), Instant.zero)
        XCTAssertEqual(Instant.zero - start, .milliseconds(-100))
        XCTAssertLessThan(Instant.zero, start)
        XCTAssertLessThan(start, .distantFuture)
        XCTAssertEqual(start.seconds, 0.1)
    }

    func testAddingPastTheEndOfTimeSaturates() {
        XCTAssertEqual(Instant.distantFuture + .seconds(1), .distantFuture)
        XCTAssertEqual(Instant(nanoseconds: .max - 5) + .nanoseconds(10), .distantFuture)
        XCTAssertEqual(Instant(nanoseconds: .max - 5) + .nanoseconds(5), .distantFuture)
    }

    func testInstantDescriptionIsTheTimeSinceTheStart() {
        XCTAssertEqual(Instant.zero.description, "0s")
        XCTAssertEqual((Instant.zero + .milliseconds(2_500)).description, "2.5s")
        XCTAssertEqual((Instant.zero + .microseconds(625)).description, "625µs")
    }
}
