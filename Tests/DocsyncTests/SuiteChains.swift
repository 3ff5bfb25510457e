import Testing

/// Suites that start processes, load the CPU or measure timing run one at a time, never beside
/// each other: a 20,000-file burst would otherwise skew the clock's loopback measurements.
@Suite(.serialized) enum HeavySuites {}

/// A second chain, one suite at a time, run beside `HeavySuites`: suites whose time goes mostly
/// in waiting (on PostgreSQL and Kinto, on large transfers, on processes killed and restarted).
/// A suite that measures timing belongs in `HeavySuites`, and its claims hold on a busy machine
/// (the clock's loopback estimate waits for a quiet round trip before it is held to a millisecond).
@Suite(.serialized) enum LongSuites {}
