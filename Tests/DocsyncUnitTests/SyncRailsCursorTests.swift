import DocsyncModel
@testable import DocsyncSyncRails
import Testing

/// The sync-rails watermark against stamps from outside.
@Suite struct SyncRailsCursorTests {
    func object(_ id: String, _ stamp: String) -> JSONObject {
        JSONObject([(key: "uuid", value: .string(id)), (key: "updated_at", value: .string(stamp))])
    }

    /// Regression: an object stamped 9999-12-31 made the agent ask for "more recent than
    /// 9999-12-31" from then on: every later change was dropped while `status` said synced.
    @Test func aStampFarInTheFutureNeverBecomesTheWatermark() {
        let now: Int64 = 1_795_000_000  // 2026-11-18T11:06:40Z
        let far = object("far", "9999-12-31T23:59:59Z")
        let normal = object("normal", "2026-11-18T11:06:40Z")
        let (fresh, next) = SyncRailsCursor().advance([far, normal], all: [far, normal], now: now)
        #expect(fresh.count == 2, "the far-future object is still passed on")
        #expect(next.watermark == 1_795_000_000)
        #expect(next.postedWatermark.hasPrefix("2026-11-18"), "\(next.postedWatermark)")
        // A change made after it is not taken for an old one.
        let later = object("later", "2026-11-18T11:10:00Z")
        let (again, _) = next.advance([later], all: [later], now: now + 200)
        #expect(again.count == 1)
    }

    @Test func stampsWithinTheSlackMoveTheWatermark() {
        let now: Int64 = 1_795_000_000
        let soon = object("soon", "2026-11-18T11:07:40Z")  // now + 60 s: a clock's error
        let (_, next) = SyncRailsCursor().advance([soon], all: [soon], now: now)
        #expect(next.watermark == now + 60)
    }
}

/// A document's members pass between the wire form and sync-rails' objects as they are, in order,
/// however many there are (each was set one by one, a lookup each: quadratic in the members), and a
/// member of the document's own named `uuid` cannot send it under another identity.
@Suite struct SyncRailsFormTests {
    @Test(.timeLimit(.minutes(1))) func manyMembersPassInOrderAndTheIdentityIsTheDocuments() {
        let own = (0..<300_000).map { (key: "k\($0)", value: JSONValue.number("\($0)")) }
        let document = JSONObject([(key: "id", value: "doc"), (key: "docType", value: "t"), (key: "uuid", value: "other")] + own)
        let object = SyncRailsForm.object(document)
        #expect(object["uuid"] == "doc" && object.count == own.count + 2, "uuid, the members, deleted_at")
        let back = SyncRailsForm.document(object, docType: "t")
        #expect(back.keys.prefix(3) == ["id", "docType", "k0"] && back.count == own.count + 2 && back["k299999"] == .number("299999"))
    }
}
