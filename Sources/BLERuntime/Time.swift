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

    /// "1.25s", "7.5ms", "625µs": compact, for logs and failure reports.
    public var description: String {
        let n = nanoseconds
        func trim(_ v: Double) -> String {
            var s = String(format3: v)
            while s.contains("."), s.hasSuffix("0") { s.removeLast() }
            if s.hasSuffix(".") { s.removeLast() }
            return s
        }
        if n == 0 { return "0s" }
        if abs(n) >= 1_000_000_000 { return trim(Double(n) / 1e9) + "s" }
        if abs(n) >= 1_000_000 { return trim(Double(n) / 1e6) + "ms" }
        if abs(n) >= 1_000 { return trim(Double(n) / 1e3) + "µs" }
        return "\(n)ns"
    }
}

extension String {
    /// Three decimals without Foundation.
    init(format3 v: Double) {
        let scaled = Int64((v * 1000).rounded())
        let sign = scaled < 0 ? "-" : ""
        let a = abs(scaled)
        let frac = a % 1000
        self = "\(sign)\(a / 1000)." + (frac < 10 ? "00" : frac < 100 ? "0" : "") + "\(frac)"
    }
}
