/// A point on a loop's clock, in nanoseconds since the loop started. On the virtual loop this is
/// simulated time; on a system loop, monotonic time since the loop was made.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static let zero = Instant(nanoseconds: 0)
    /// Later than any instant a run will reach.
    public static let distantFuture = Instant(nanoseconds: .max)

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Instant, b: TimeSpan) -> Instant {
        let (sum, overflow) = a.nanoseconds.addingReportingOverflow(b.nanoseconds)
        return Instant(nanoseconds: overflow ? .max : sum)
    }
    public static func - (a: Instant, b: TimeSpan) -> Instant { Instant(nanoseconds: a.nanoseconds - b.nanoseconds) }
    public static func - (a: Instant, b: Instant) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds - b.nanoseconds) }

    /// Seconds as a Double, for reports.
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    public var description: String { TimeSpan(nanoseconds: nanoseconds).description }
}

/// A length of time in nanoseconds.
public struct TimeSpan: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// Fractional seconds, rounded to the nanosecond.
    public init(seconds: Double) { nanoseconds = Int64((seconds * 1e9).rounded()) }

    public static let zero = TimeSpan(nanoseconds: 0)

    public static func nanoseconds(_ n: Int64) -> TimeSpan { TimeSpan(nanoseconds: n) }
    public static func microseconds(_ n: Int64) -> TimeSpan { TimeSpan(nanoseconds: n * 1_000) }
    public static func milliseconds(_ n: Int64) -> TimeSpan { TimeSpan(nanoseconds: n * 1_000_000) }
    public static func seconds(_ n: Int64) -> TimeSpan { TimeSpan(nanoseconds: n * 1_000_000_000) }
    @_disfavoredOverload  // so that `.seconds(30)` picks the Int64 overload instead of being ambiguous
    public static func seconds(_ s: Double) -> TimeSpan { TimeSpan(nanoseconds: Int64((s * 1e9).rounded())) }

    public static func < (a: TimeSpan, b: TimeSpan) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds + b.nanoseconds) }
    public static func - (a: TimeSpan, b: TimeSpan) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds - b.nanoseconds) }
    public static func * (a: TimeSpan, n: Int64) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds * n) }
    public static func / (a: TimeSpan, n: Int64) -> TimeSpan { TimeSpan(nanoseconds: a.nanoseconds / n) }

    public var seconds: Double { Double(nanoseconds) / 1e9 }
    public var milliseconds: Double { Double(nanoseconds) / 1e6 }

    /// "1.25s", "7.5ms", "625µs": compact, for logs and failure reports. At most three decimals,
    /// rounded half away from zero in integers (exact at any magnitude, no trap at `Int64.min`);
    /// when rounding reaches a thousand of a unit the next one is used, so 999.9996 ms reads "1s".
    public var description: String {
        let n = nanoseconds
        if n == 0 { return "0s" }
        let units: [(nanoseconds: UInt64, name: String)] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs")]
        let magnitude = n.magnitude
        guard var index = units.firstIndex(where: { magnitude >= $0.nanoseconds }) else { return "\(n)ns" }
        func thousandths(_ unit: Int) -> UInt64 {
            let perThousandth = units[unit].nanoseconds / 1_000
            return (magnitude + perThousandth / 2) / perThousandth   // no overflow: magnitude <= 2^63
        }
        var count = thousandths(index)
        if count >= 1_000_000, index > 0 {
            index -= 1
            count = thousandths(index)
        }
        var decimals = String(String(count % 1_000 + 1_000).dropFirst())   // three digits, zeros kept
        while decimals.hasSuffix("0") { decimals.removeLast() }
        return (n < 0 ? "-" : "") + "\(count / 1_000)" + (decimals.isEmpty ? "" : "." + decimals) + units[index].name
    }
}
