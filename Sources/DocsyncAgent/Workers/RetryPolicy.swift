import DocsyncClock

/// How long to wait after a transient failure: exponential backoff with jitter, honouring the
/// server's `Retry-After`. Pure: the caller supplies the randomness, so tests can pin it.
public struct RetryPolicy: Sendable, Hashable {
    public var initial: Duration
    public var cap: Duration
    /// Each delay is scaled by a factor drawn from `1 - jitter ... 1 + jitter`, so agents that
    /// lost the same server do not come back in lockstep.
    public var jitter: Double

    public init(initial: Duration = .milliseconds(500), cap: Duration = .seconds(60), jitter: Double = 0.2) {
        self.initial = initial
        self.cap = cap
        self.jitter = jitter
    }

    /// The wait after the `failures`-th consecutive failure (1-based); `unit` is a random number
    /// in `0..<1`.
    public func delay(afterFailures failures: Int, retryAfter: Duration? = nil, unit: Double) -> Duration {
        let exponent = min(max(failures - 1, 0), 30)
        var base = initial * (1 << exponent)
        if base > cap { base = cap }
        let factor = 1 - jitter + 2 * jitter * unit
        var delay = base * factor
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        return delay
    }
}

extension RetryPolicy {
    /// The clock retry deadlines are kept on (the outbox's `next_attempt_at`): milliseconds of
    /// `CLOCK_BOOTTIME`, monotonic and counting suspend. Never wall or server time: a wall clock
    /// stepped back three hours would otherwise hold every retry for three hours. Deadlines do not
    /// survive a reboot (the clock starts over), so the agent makes every entry due when it starts.
    public static func deadlineNow() -> Int64 { SystemClockSeam().bootNanoseconds() / 1_000_000 }

    /// When the next try after the `failures`-th is due, on ``deadlineNow()``'s clock, counted
    /// from `now`.
    public func deadline(afterFailures failures: Int, from now: Int64 = deadlineNow()) -> Int64 {
        now + Int64(delay(afterFailures: failures, unit: Double.random(in: 0..<1)) / .milliseconds(1))
    }
}
