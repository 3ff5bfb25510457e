#if canImport(Glibc)
import Glibc
#endif

/// Where time comes from. The real one reads the kernel; tests substitute a clock they step.
public protocol ClockSeam: Sendable {
    /// Nanoseconds on a monotonic clock that keeps counting across suspend (`CLOCK_BOOTTIME`).
    func bootNanoseconds() -> Int64
    /// Nanoseconds since the Unix epoch by the device's wall clock (`CLOCK_REALTIME`), which users
    /// and NTP daemons may step at any moment.
    func wallNanoseconds() -> Int64
}

/// The kernel's clocks.
public struct SystemClockSeam: ClockSeam {
    public init() {}

    public func bootNanoseconds() -> Int64 { Self.read(CLOCK_BOOTTIME) }
    public func wallNanoseconds() -> Int64 { Self.read(CLOCK_REALTIME) }

    static func read(_ id: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(id, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
