@testable import DocsyncAgent
@testable import DocsyncIndex
import DocsyncTestSupport
import Foundation
import GRDB
import Testing

/// The outbox's keys and kinds as types, and what the workers make of an outbox they cannot read.
struct OutboxTypesTests {
    /// A key names its property whatever it holds (a `:` included; an id never holds one,
    /// DocumentRules), and a key of another kind or document names none.
    @Test func aKeyGivesBackItsPropertyAndOnlyForItsOwnKindAndDocument() {
        let upload = OutboxKey.upload(docID: "a-1", property: "scan:back")
        #expect(upload.property(of: "a-1", kind: .upload) == "scan:back")
        #expect(upload.property(of: "a-1", kind: .download) == nil)
        #expect(upload.property(of: "a", kind: .upload) == nil)
        #expect(OutboxKey.document("a").property(of: "a", kind: .put) == nil)
        #expect(OutboxKey.download(docID: "x", property: "").property(of: "x", kind: .download) == "")
        #expect(OutboxKey.document("a") != OutboxKey.upload(docID: "a", property: ""), "no two kinds share a key")
    }

    /// A one-shot `sync` over an outbox it cannot read says so; read as "nothing left", it ended
    /// as if everything had gone. A worker that cannot read when its next retry is due looks again
    /// soon; read as "none due", it waited for a wake that only a new change would bring.
    @Test func anOutboxThatCannotBeReadIsNeverTakenForAnEmptyOne() async throws {
        let folder = try TempFolder("outbox-unreadable")
        defer { folder.remove() }
        let index = try Index.open(root: folder.path)
        let logs = CapturedLogs()
        #expect(await index.leftAfterDrain(.put, failure: nil, what: "changes could not be delivered") == nil, "an empty outbox: done")
        try await index.write { try $0.db.execute(sql: "DROP TABLE outbox") }
        for kind in OutboxKind.allCases {
            let left = await index.leftAfterDrain(kind, failure: nil, what: "could not be delivered")
            #expect(left?.contains("cannot read the index") == true, "\(kind): \(left ?? "nil")")
            guard case .idle(let wait?) = await index.idleUntilDue(kind, logger: logs.logger()) else {
                Issue.record("\(kind): waits for a wake alone")
                continue
            }
            #expect(wait <= .seconds(10))
        }
        #expect(logs.count(containing: "cannot read the outbox") == OutboxKind.allCases.count, "said each time")
    }
}
