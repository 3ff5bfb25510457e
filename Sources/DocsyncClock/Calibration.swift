import Foundation

/// A calibration as stored in the index: reused after a restart only on the same boot, since the
/// offset is relative to the boot-time clock, which starts over at every boot.
public struct Calibration: Sendable, Codable, Hashable {
    public var bootID: String
    public var offset: Int64
    /// The bound when the sample was taken (drift since then is added on use).
    public var bound: Int64
    public var minDelay: Int64
    public var samples: Int
    public var source: ClockSample.Source
    public var sampledAt: Int64

    /// This boot's id (`/proc/sys/kernel/random/boot_id`), or `nil` where the kernel has none.
    public static func currentBootID() -> String? {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func encoded() -> String {
        (try? String(decoding: JSONEncoder().encode(self), as: UTF8.self)) ?? ""
    }

    public static func decode(_ text: String) -> Calibration? {
        try? JSONDecoder().decode(Calibration.self, from: Data(text.utf8))
    }
}

extension ServerClock {
    /// The current estimate as a storable calibration, if calibrated.
    public func snapshot(bootID: String? = Calibration.currentBootID()) -> Calibration? {
        guard let bootID, let e = estimate else { return nil }
        let drift = e.bound - (sampleBound ?? e.bound)
        return Calibration(
            bootID: bootID, offset: e.offset, bound: e.bound - max(0, drift), minDelay: e.minDelay, samples: e.samples,
            source: e.source, sampledAt: e.sampledAt)
    }
}
