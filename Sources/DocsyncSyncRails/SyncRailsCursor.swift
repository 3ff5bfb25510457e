import DocsyncEndpoint
import DocsyncModel

/// Where a sync-rails folder is in the server's changes: the latest `updated_at` seen (whole
/// seconds, the server's resolution) and what each object stamped in that second looked like.
///
/// The server returns what is "more recent than" the posted `updated_at`. Posting the latest
/// stamp seen would miss an object stamped later in that same second; so the watermark posted is
/// one second earlier, and what comes back from the last second exactly as it was seen is dropped.
struct SyncRailsCursor {
    /// Unix seconds of the latest `updated_at` seen; `nil` before the first reply.
    var watermark: Int64?
    /// id → content hash of the objects stamped in the watermark's second.
    var seen: [String: String] = [:]

    init(watermark: Timestamp? = nil) {
        self.watermark = watermark.map { $0.unixMilliseconds / 1000 }
    }

    init(_ cursor: SyncCursor?) {
        guard let cursor, case .object(let o)? = try? JSONParser.parse(cursor.text) else { return }
        if case .number(let w)? = o["watermark"] { watermark = Int64(w) }
        for (id, hash) in o["seen"]?.object?.members ?? [] { if let h = hash.string { seen[id] = h } }
    }

    var cursor: SyncCursor {
        var o = JSONObject()
        if let watermark { o["watermark"] = .number(String(watermark)) }
        o["seen"] = .object(JSONObject(seen.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) }))
        return SyncCursor(JSONWriter.string(.object(o)))
    }

    /// The `updated_at` to post: a second before the watermark, in the seed's format.
    var postedWatermark: String {
        let seconds = max(0, (watermark ?? 1) - 1)
        let text = Timestamp(unixMilliseconds: seconds * 1000).rfc3339
        return String(text.prefix(19)) + "Z"
    }

    /// How far past the server's time (as the agent's clock estimates it) a stamp may be and still
    /// move the watermark: a clock's error and the second's rounding, no more.
    static let futureSlack: Int64 = 300

    /// `candidates` (documents in wire form) without those already seen, and the cursor after
    /// `all` (the raw objects of the reply). `now`: the server's time in Unix seconds. A stamp
    /// later than `now` (beyond ``futureSlack``) is passed on but never becomes the watermark: an
    /// object dated 9999-12-31 would otherwise make every later change "older" and drop it.
    func advance(_ candidates: [JSONObject], all: [JSONObject], now: Int64) -> ([JSONObject], SyncRailsCursor) {
        var next = self
        for object in all {
            guard let id = object["uuid"]?.string, let stamp = Self.seconds(object), stamp <= now + Self.futureSlack else { continue }
            if stamp > (next.watermark ?? Int64.min) {
                next.watermark = stamp
                next.seen = [:]
            }
            if stamp == next.watermark { next.seen[id] = Self.hash(object) }
        }
        let byID = Dictionary(all.compactMap { o in o["uuid"]?.string.map { ($0, o) } }, uniquingKeysWith: { _, last in last })
        let fresh = candidates.filter { document in
            guard let id = document["id"]?.string, let raw = byID[id] else { return true }
            guard let stamp = Self.seconds(raw), let watermark else { return true }
            if stamp < watermark { return false }
            return !(stamp == watermark && seen[id] == Self.hash(raw))
        }
        return (fresh, next)
    }

    static func seconds(_ object: JSONObject) -> Int64? {
        object[DocumentRules.updatedAtKey]?.string.flatMap { Timestamp(rfc3339: $0) }.map { $0.unixMilliseconds / 1000 }
    }

    static func hash(_ object: JSONObject) -> String { ContentHash.sha256Hex(JSONWriter.string(.object(object)).utf8) }
}
