#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The monotonic clock, CLOCK_MONOTONIC (clock_gettime(2), POSIX.1-2008): it never jumps with
/// NTP or a changed wall clock, so deadlines measured on it are safe.
///
/// This is the one place in BLELab's library modules that reads a clock. Only `SystemEventLoop`
/// uses it; everything else gets the time from its loop (`EventLoop.now`), which is what keeps sim
/// runs deterministic. (The executables read the clock too, but only to report wall time.)
struct MonotonicClock {
    /// Nanoseconds on CLOCK_MONOTONIC since an unspecified origin (boot, on Linux).
    static func nanoseconds() -> Int64 {
        var t = timespec()
        // Cannot fail for CLOCK_MONOTONIC with a valid pointer (EINVAL/EFAULT only).
        _ = clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}
