import Testing

/// Suites that start processes, load the CPU or measure timing run one at a time, never beside
/// each other: a 20,000-file burst would otherwise skew the clock's loopback measurements.
///
/// This chain is the run's longest: its length is the suite's. A serialized suite's children run
/// in source order (file name, then line), and the CPU-heaviest of them, `WhileOthersPullTests`
/// (300 folders pulling each other's documents), is named to come last. First, it shared the two
/// cores with every parallel suite starting up and took 112 s (45 s alone); last, it runs
/// where the chain otherwise leaves the cores idle. A new suite here named after it runs after it.
@Suite(.serialized) enum HeavySuites {}

/// A second chain, one suite at a time, run beside `HeavySuites`: suites whose time goes mostly
/// in waiting (on PostgreSQL and Kinto, on large transfers, on processes killed and restarted).
/// A suite that measures timing belongs in `HeavySuites`, and its claims hold on a busy machine
/// (the clock's loopback estimate waits for a quiet round trip before it is held to a millisecond).
@Suite(.serialized) enum LongSuites {}
