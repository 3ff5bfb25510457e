/// NTP's clock filter: of the recent samples, trust the one with the smallest wire delay.
///
/// A reply that was quick in both directions leaves little room for asymmetry, so its offset has
/// the tightest bound (δ/2); slow samples are dominated, never averaged in. The bound grows with
/// the sample's age by the worst drift a quartz clock shows (`driftPPM`).
///
/// Outliers: implausible samples are dropped, and only the largest group of mutually consistent
/// samples (overlapping `offset ± bound` intervals) is considered, so a sample from a lying or
/// stepped server clock is ignored until most of the window agrees with it.
public struct MinDelayFilter: ClockEstimator {
    public var window: Int
    public let maxAgeNanoseconds: Int64
    public var driftPPM: Int64
    private var samples: [ClockSample] = []

    public init(window: Int = 16, maxAge: Duration = .seconds(3600), driftPPM: Int64 = 15) {
        self.window = window
        self.maxAgeNanoseconds = maxAge.components.seconds * 1_000_000_000
        self.driftPPM = driftPPM
    }

    public mutating func add(_ sample: ClockSample) {
        guard sample.isPlausible else { return }
        // Once finer samples exist, a coarser one (a Date header beside write stamps or sync
        // headers) adds nothing but noise; a finer one retires the coarser ones.
        let resolution = sample.source.resolution
        if samples.contains(where: { $0.source.resolution < resolution }) { return }
        samples.removeAll { $0.source.resolution > resolution }
        samples.append(sample)
        if samples.count > window { samples.removeFirst(samples.count - window) }
        chooseForWholeWindow()
    }

    public mutating func reset() {
        samples.removeAll()
        chooseForWholeWindow()
    }

    /// The choice while every sample is recent, made once per sample added: the estimate is read
    /// for every document the agent stamps, and choosing is quadratic in the window.
    private var wholeWindow: (chosen: ClockSample, allRecentUntil: Int64)?

    private mutating func chooseForWholeWindow() {
        wholeWindow = Self.choose(samples).map { ($0, samples.map(\.receivedAt).min()! + maxAgeNanoseconds) }
    }

    public var count: Int { samples.count }

    public func estimate(at bootNow: Int64) -> ClockEstimate? {
        let chosen: ClockSample
        let count: Int
        if let whole = wholeWindow, bootNow <= whole.allRecentUntil {
            (chosen, count) = (whole.chosen, samples.count)
        } else {
            let recent = samples.filter { bootNow - $0.receivedAt <= maxAgeNanoseconds }
            guard let choice = Self.choose(recent) else { return nil }
            (chosen, count) = (choice, recent.count)
        }
        let age = max(0, bootNow - chosen.receivedAt)
        return ClockEstimate(
            offset: chosen.offset,
            bound: chosen.bound + age / 1_000_000 * driftPPM,
            minDelay: chosen.delay,
            samples: count,
            source: chosen.source,
            sampledAt: chosen.receivedAt)
    }

    /// Every honest sample's interval `offset ± bound` holds the true offset, so honest samples
    /// overlap one another. Keep the largest group that does (a lying or stepped minority is
    /// left out; a step confirmed by the majority wins), then its quickest sample.
    private static func choose(_ recent: [ClockSample]) -> ClockSample? {
        var cluster: [ClockSample] = []
        for candidate in recent {
            let group = recent.filter { overlaps($0, candidate) }
            if group.count > cluster.count { cluster = group }
        }
        return cluster.min { $0.delay < $1.delay }
    }

    private static func overlaps(_ a: ClockSample, _ b: ClockSample) -> Bool {
        abs(a.offset - b.offset) <= a.bound + b.bound
    }
}

/// ServerSync's estimator, kept for comparison and for endpoints that were tuned to it: an
/// exponential moving average of each sample's offset. The first sample is taken as is; each
/// later one moves the average by α = smoothing / ω (0.5 / 1.1 ≈ 0.45).
///
/// Its weakness is the reason the min-delay filter is the default: every sample's asymmetry is
/// averaged in, so on a jittery path its error is a fraction of the *typical* delay, where the
/// filter's is half the *smallest* one.
public struct EMAEstimator: ClockEstimator {
    public var omega: Double
    public var smoothing: Double
    private var average: Double?
    private var count = 0
    private var last: ClockSample?
    private var minDelay: Int64 = .max

    public init(omega: Double = 1.1, smoothing: Double = 0.5) {
        self.omega = omega
        self.smoothing = smoothing
    }

    public mutating func add(_ sample: ClockSample) {
        guard sample.isPlausible else { return }
        let raw = Double(sample.offset)
        if let average {
            self.average = average + (smoothing / omega) * (raw - average)
        } else {
            average = raw
        }
        count += 1
        last = sample
        minDelay = min(minDelay, sample.delay)
    }

    public mutating func reset() {
        average = nil
        count = 0
        last = nil
        minDelay = .max
    }

    public func estimate(at bootNow: Int64) -> ClockEstimate? {
        guard let average, let last else { return nil }
        // The EMA has no principled bound; report the latest sample's, which is what it rests on most.
        return ClockEstimate(
            offset: Int64(average.rounded()), bound: last.bound, minDelay: minDelay, samples: count,
            source: last.source, sampledAt: last.receivedAt)
    }
}
