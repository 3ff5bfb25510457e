/// One exchange with the server, NTP-style. All client instants are on the boot-time clock.
public struct ClockSample: Sendable, Hashable {
    public enum Source: String, Sendable, Codable {
        /// `X-Sync-UTC` / `X-Sync-Duration` headers or `/api/time`: nanosecond resolution.
        case syncHeaders = "sync-headers"
        /// A write's stamp in the server's own clock (Kinto's `last_modified`): millisecond
        /// resolution, taken at an unknown instant while the request was served.
        case writeStamp = "write-stamp"
        /// Only the `Date` header: one-second resolution, unknown server duration.
        case dateHeader = "date-header"

        /// Nanoseconds one reading of the server's time can hide (its truncation).
        public var resolution: Int64 {
            switch self {
            case .syncHeaders: 0
            case .writeStamp: 1_000_000
            case .dateHeader: 1_000_000_000
            }
        }
    }

    /// T1: boot-clock nanoseconds when the request was sent.
    public var sentAt: Int64
    /// T4: boot-clock nanoseconds when the reply arrived.
    public var receivedAt: Int64
    /// T3: the server's UTC when it replied, Unix nanoseconds. For a `Date` header or a write
    /// stamp, the middle of the second or millisecond it names.
    public var serverUTC: Int64
    /// D: nanoseconds the server spent on the request (0 when unknown).
    public var serverDuration: Int64
    public var source: Source

    public init(sentAt: Int64, receivedAt: Int64, serverUTC: Int64, serverDuration: Int64, source: Source = .syncHeaders) {
        self.sentAt = sentAt
        self.receivedAt = receivedAt
        self.serverUTC = serverUTC
        self.serverDuration = serverDuration
        self.source = source
    }

    /// θ = T3 − (T1 + T4 + D)/2: what to add to the boot clock to get the server's UTC.
    public var offset: Int64 { serverUTC - (sentAt + receivedAt + serverDuration) / 2 }

    /// δ = (T4 − T1) − D: the time the request and reply spent on the wire.
    public var delay: Int64 { (receivedAt - sentAt) - serverDuration }

    /// How far the true offset can be from `offset` given this sample alone: half the wire time
    /// (the split between request and reply is unknown), plus half the source's resolution (a
    /// `Date` header's truncation to whole seconds, a write stamp's to milliseconds).
    public var bound: Int64 {
        delay / 2 + source.resolution / 2
    }

    /// Samples no estimator should believe: a reply before the request, a server that claims to
    /// have worked longer than the whole round trip, or a round trip over a minute. Checked in an
    /// order whose arithmetic cannot overflow, whatever the fields hold.
    public var isPlausible: Bool {
        guard sentAt >= 0, receivedAt >= sentAt, serverDuration >= 0 else { return false }
        let roundTrip = receivedAt - sentAt  // both non-negative: cannot overflow
        guard serverDuration <= roundTrip, roundTrip < 60_000_000_000 else { return false }
        // ``offset``'s arithmetic, which must not overflow either.
        let (pair, o1) = sentAt.addingReportingOverflow(receivedAt)
        let (sum, o2) = pair.addingReportingOverflow(serverDuration)
        return !o1 && !o2 && !serverUTC.subtractingReportingOverflow(sum / 2).overflow
    }

    /// Server times a reply may claim: 2000-01-01 to 2200-01-01 (Unix nanoseconds). A header
    /// outside them is a lying or broken server; believed, it would stamp changes in 2255 or
    /// overflow the arithmetic that turns boot time into server time.
    public static let saneServerTimes: Range<Int64> = 946_684_800_000_000_000..<7_258_118_400_000_000_000
}

/// The current belief about the server's clock.
public struct ClockEstimate: Sendable, Hashable {
    /// Server UTC minus boot clock, nanoseconds.
    public var offset: Int64
    /// The true offset lies within `offset ± bound`, nanoseconds (drift since the sample included).
    public var bound: Int64
    /// The smallest round-trip wire delay among the samples used, nanoseconds.
    public var minDelay: Int64
    /// Samples the estimate rests on.
    public var samples: Int
    public var source: ClockSample.Source
    /// Boot-clock nanoseconds of the sample the estimate came from.
    public var sampledAt: Int64

    public init(offset: Int64, bound: Int64, minDelay: Int64, samples: Int, source: ClockSample.Source, sampledAt: Int64) {
        self.offset = offset
        self.bound = bound
        self.minDelay = minDelay
        self.samples = samples
        self.source = source
        self.sampledAt = sampledAt
    }
}

/// Anything that turns samples into an estimate.
public protocol ClockEstimator: Sendable {
    mutating func add(_ sample: ClockSample)
    func estimate(at bootNow: Int64) -> ClockEstimate?
    mutating func reset()
}
