import Foundation
import Logging
import Synchronization

/// The headers of one reply that can carry the server's time.
public struct ReplyHeaders: Sendable {
    public var syncUTC: String?
    public var syncDuration: String?
    public var date: String?

    public init(syncUTC: String?, syncDuration: String?, date: String?) {
        self.syncUTC = syncUTC
        self.syncDuration = syncDuration
        self.date = date
    }
}

/// The server's time, estimated on this device. Thread-safe; one per endpoint.
///
/// The estimate is an offset from the boot-time clock (`CLOCK_BOOTTIME`), not from the wall clock:
/// a user setting the device's clock hours ahead changes nothing here. Without samples it falls
/// back to the device's wall clock and says so (`isCalibrated == false`).
public final class ServerClock: Sendable {
    public enum Method: String, Sendable, CaseIterable {
        case minDelay = "min-delay"
        case ema
    }

    public let seam: any ClockSeam
    private let logger: Logger?
    private let state: Mutex<State>

    struct State {
        var filter: MinDelayFilter = MinDelayFilter()
        var ema: EMAEstimator = EMAEstimator()
        var method: Method
        /// A calibration restored from the index, used until the first fresh sample.
        var prior: Calibration?
        /// Wall minus boot when last looked at: a jump means the wall clock was stepped.
        var wallMinusBoot: Int64?
        /// Replies whose time was out of range (see ``observe(headers:sentAt:receivedAt:)``).
        var droppedSamples = 0
    }

    /// - Parameter window: how many recent samples the min-delay filter chooses from.
    public init(seam: any ClockSeam = SystemClockSeam(), method: Method = .minDelay, window: Int = 16, logger: Logger? = nil) {
        self.seam = seam
        self.logger = logger
        var state = State(method: method)
        state.filter.window = window
        self.state = Mutex(state)
    }

    /// Feeds one sample.
    public func add(sample: ClockSample) {
        state.withLock {
            $0.filter.add(sample)
            $0.ema.add(sample)
        }
    }

    /// Turns a reply's headers into a sample: `X-Sync-UTC` (+ `X-Sync-Duration`) when present,
    /// else the `Date` header. Replies with neither are ignored; so are values outside
    /// ``ClockSample/saneServerTimes``, a negative duration or one longer than the round trip
    /// (logged once: every reply of a lying server carries them).
    public func observe(headers: ReplyHeaders, sentAt: Int64, receivedAt: Int64) {
        let sample: ClockSample
        if let text = headers.syncUTC {
            let utc = Int64(text.trimmingCharacters(in: .whitespaces))
            let duration = headers.syncDuration.map { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            guard let utc, let duration else { return dropped("X-Sync-UTC \(text.prefix(40)) / X-Sync-Duration \(headers.syncDuration?.prefix(40) ?? "-") is not a number") }
            sample = ClockSample(sentAt: sentAt, receivedAt: receivedAt, serverUTC: utc, serverDuration: duration)
        } else if let date = headers.date, let seconds = HTTPDate.parse(date) {
            guard ClockSample.saneServerTimes.contains(seconds &* 1_000_000_000), seconds < Int64.max / 1_000_000_000 else {
                return dropped("Date \(date.prefix(40)) is outside 2000-2200")
            }
            sample = ClockSample(
                sentAt: sentAt, receivedAt: receivedAt, serverUTC: seconds * 1_000_000_000 + 500_000_000,
                serverDuration: 0, source: .dateHeader)
        } else {
            return
        }
        guard ClockSample.saneServerTimes.contains(sample.serverUTC) else { return dropped("the server's time \(sample.serverUTC) ns is outside 2000-2200") }
        guard sample.isPlausible else { return dropped("the server claims \(sample.serverDuration) ns of work in a round trip of \(receivedAt &- sentAt) ns") }
        add(sample: sample)
    }

    /// Takes a write's stamp in the server's clock (Unix milliseconds, as Kinto's `last_modified`)
    /// as a sample of the exchange that made it: the stamp was taken somewhere between `sentAt`
    /// and `receivedAt`. A stamp outside 2000–2200 is dropped like a lying header.
    public func observe(writeStampMilliseconds stamp: Int64, sentAt: Int64, receivedAt: Int64) {
        let (nanoseconds, overflow) = stamp.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow, ClockSample.saneServerTimes.contains(nanoseconds) else {
            return dropped("a write stamp of \(stamp) ms is outside 2000-2200")
        }
        let sample = ClockSample(sentAt: sentAt, receivedAt: receivedAt, serverUTC: nanoseconds + 500_000, serverDuration: 0, source: .writeStamp)
        guard sample.isPlausible else { return dropped("a write stamp came back from an implausible exchange") }
        add(sample: sample)
    }

    /// Logs, once per clock, that a reply's time was not believed.
    private func dropped(_ why: String) {
        let first = state.withLock { s in
            defer { s.droppedSamples += 1 }
            return s.droppedSamples == 0
        }
        if first { logger?.warning("ignoring the server's clock headers: \(why); changes keep the last good calibration") }
    }

    /// Replies whose clock headers were not believed.
    public var droppedSamples: Int { state.withLock { $0.droppedSamples } }

    public func reset() {
        state.withLock {
            $0.filter.reset()
            $0.ema.reset()
            $0.prior = nil
        }
    }

    /// Adopts a stored calibration if it was made on this boot (else ignores it, returning false).
    @discardableResult
    public func restore(_ calibration: Calibration, bootID: String? = Calibration.currentBootID()) -> Bool {
        guard calibration.bootID == bootID, calibration.sampledAt <= seam.bootNanoseconds() else { return false }
        state.withLock { $0.prior = calibration }
        return true
    }

    /// The current estimate, or `nil` while uncalibrated.
    public var estimate: ClockEstimate? {
        let boot = seam.bootNanoseconds()
        return state.withLock { s in
            let fresh: ClockEstimate? = switch s.method {
            case .minDelay: s.filter.estimate(at: boot)
            case .ema: s.ema.estimate(at: boot)
            }
            if let fresh { return fresh }
            guard let p = s.prior else { return nil }
            let age = max(0, boot - p.sampledAt)
            return ClockEstimate(
                offset: p.offset, bound: p.bound + age / 1_000_000 * s.filter.driftPPM, minDelay: p.minDelay,
                samples: p.samples, source: p.source, sampledAt: p.sampledAt)
        }
    }

    /// The bound of the sample behind the estimate, without drift (for storing).
    var sampleBound: Int64? {
        let boot = seam.bootNanoseconds()
        return state.withLock { s in
            guard let e = s.filter.estimate(at: boot) else { return s.prior?.bound }
            return e.bound - max(0, boot - e.sampledAt) / 1_000_000 * s.filter.driftPPM
        }
    }

    /// How old the estimate's sample is, or `nil` while uncalibrated.
    public var estimateAge: Duration? {
        guard let e = estimate else { return nil }
        return .nanoseconds(max(0, seam.bootNanoseconds() - e.sampledAt))
    }

    public var isCalibrated: Bool { estimate != nil }

    /// The server's current time, Unix nanoseconds (the device's wall clock while uncalibrated).
    public func nowNanoseconds() -> Int64 {
        let boot = seam.bootNanoseconds()
        noticeWallStep(boot: boot)
        if let e = estimate { return boot + e.offset }
        return seam.wallNanoseconds()
    }

    /// What `estimate` says of the server's clock against this machine's wall clock: server minus
    /// local, nanoseconds (what `docsync clock`, `doctor` and the metrics report).
    public func wallOffset(_ estimate: ClockEstimate) -> Int64 {
        estimate.offset + seam.bootNanoseconds() - seam.wallNanoseconds()
    }

    /// The server's current time, to the millisecond.
    public func now() -> DocsyncClockTimestamp { nowNanoseconds() / 1_000_000 }

    /// A device wall-clock instant (Unix ns) expressed in server time.
    public func toServerTime(_ clientWallNanoseconds: Int64) -> Int64 {
        guard let e = estimate else { return clientWallNanoseconds }
        let boot = clientWallNanoseconds - (seam.wallNanoseconds() - seam.bootNanoseconds())
        return boot + e.offset
    }

    /// A server instant (Unix ns) expressed on the device's wall clock.
    public func toClientTime(_ serverNanoseconds: Int64) -> Int64 {
        guard let e = estimate else { return serverNanoseconds }
        let boot = serverNanoseconds - e.offset
        return boot + (seam.wallNanoseconds() - seam.bootNanoseconds())
    }

    private func noticeWallStep(boot: Int64) {
        let difference = seam.wallNanoseconds() - boot
        let previous = state.withLock { s -> Int64? in
            defer { s.wallMinusBoot = difference }
            return s.wallMinusBoot
        }
        if let previous, abs(difference - previous) > 1_000_000_000 {
            logger?.notice(
                "the device's wall clock was stepped; calibrated time is unaffected",
                metadata: ["clock.step_ms": "\((difference - previous) / 1_000_000)"])
        }
    }
}

/// Unix milliseconds.
public typealias DocsyncClockTimestamp = Int64
