extension Duration {
    /// Whole milliseconds (truncated): deadlines kept as integers (the outbox's boot-clock
    /// retries, tombstone retention).
    public var wholeMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
    /// Whole nanoseconds (truncated): monotonic clock arithmetic and NIO's time amounts.
    public var wholeNanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
