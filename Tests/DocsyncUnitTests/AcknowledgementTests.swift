@testable import DocsyncAgent
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Testing

/// What an acknowledged write leaves in the index: the merge base a later pull merges against.
@Suite struct AcknowledgementTests {
    let sent = #"{"id":"a","docType":"note","v":1}"#
    let edited = #"{"id":"a","docType":"note","v":2}"#

    func withQueued(_ body: (Index, OutboxEntry) async throws -> Void) async throws {
        let folder = try TempFolder("ack")
        defer { folder.remove() }
        let index = try Index.open(root: folder.path)
        let sent = self.sent
        let entry = try await index.write { tx in
            try tx.upsertDocument(DocumentRow(id: "a", docType: "note", path: "a.json", body: sent, bodyHash: ContentHash.sha256Hex(sent.utf8), updatedAt: 1_000))
            try tx.enqueue(key: .document("a"), docID: "a", kind: .put, payload: nil, bodyHash: ContentHash.sha256Hex(sent.utf8), queuedAt: 1)
            return try tx.dueEntries(now: 10, limit: 1)[0]
        }
        try await body(index, entry)
    }

    @Test func anAcknowledgementMakesTheSentBodyTheBase() async throws {
        try await withQueued { index, entry in
            let ack = Acknowledgement(entry, outcome: .storedAsSent(revision: 3))
            try await index.write { tx in try ack.record(tx: tx, anyUploads: false) }
            let doc = try #require(try await index.read { try $0.document(id: "a") })
            #expect(doc.base == sent && doc.serverRev == 3 && doc.state == .synced)
            #expect(try await index.read { try $0.pendingCount() } == 0)
        }
    }

    @Test func whenTheFileChangedWhileInFlightTheBaseIsStillWhatWasSent() async throws {
        try await withQueued { index, entry in
            let edited = self.edited
            try await index.write { tx in
                var doc = try tx.document(id: "a")!
                doc.body = edited
                doc.bodyHash = ContentHash.sha256Hex(edited.utf8)
                doc.updatedAt = 2_000
                try tx.upsertDocument(doc)
                try tx.enqueue(key: .document("a"), docID: "a", kind: .put, payload: nil, bodyHash: doc.bodyHash, queuedAt: 2)
            }
            let ack = Acknowledgement(entry, outcome: .storedAsSent(revision: 3))
            try await index.write { tx in try ack.record(tx: tx, anyUploads: false) }
            let doc = try #require(try await index.read { try $0.document(id: "a") })
            #expect(doc.body == edited)
            #expect(doc.base == sent, "the server holds the version sent, not the edit")
            #expect(doc.serverRev == 3 && doc.state == .pending)
            #expect(try await index.read { try $0.outboxEntry(key: .document("a"))?.payload.contains(#""v":2"#) } == true)
        }
    }

    @Test func anEchoedDocumentIsTheBaseAsTheServerHoldsIt() async throws {
        try await withQueued { index, entry in
            let stored: JSONValue = ["id": "a", "docType": "note", "v": 1, "extra": "added by the server", "rev": 3]
            let ack = Acknowledgement(entry, outcome: .stored(stored.object!))
            try await index.write { tx in try ack.record(tx: tx, anyUploads: false) }
            let doc = try #require(try await index.read { try $0.document(id: "a") })
            #expect(doc.base == #"{"id":"a","docType":"note","v":1,"extra":"added by the server"}"#)
        }
    }
}
