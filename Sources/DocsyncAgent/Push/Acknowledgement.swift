import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel

/// An acknowledged write: the entry leaves the outbox if it is still the version sent, and the
/// document remembers what the server holds (revision and merge base).
struct Acknowledgement: Sendable {
    let entry: OutboxEntry
    let serverRev: Int64?
    /// The server's version as the folder would hold it, when the reply had one.
    let wire: JSONObject?
    let baseText: String?
    let baseHash: String?
    /// The endpoint stored the body as sent, which becomes the merge base.
    let storedAsSent: Bool

    init(_ entry: OutboxEntry, outcome: PushOutcome) {
        self.entry = entry
        var object: JSONObject?
        switch outcome {
        case .storedAsSent(let revision):
            (serverRev, storedAsSent) = (revision, true)
        case .stored(let stored):
            if case .number(let rev)? = stored[DocumentRules.revKey] { serverRev = Int64(rev) } else { serverRev = nil }
            (storedAsSent, object) = (false, stored)
        case .failed:
            (serverRev, storedAsSent) = (nil, false)
        }
        if let object, let docType = object["docType"]?.string {
            let wire = WireForm.body(object, docType: docType)
            let text = JSONWriter.string(.object(wire))
            self.wire = wire
            baseText = text
            baseHash = ContentHash.sha256Hex(text.utf8)
        } else {
            wire = nil
            baseText = nil
            baseHash = nil
        }
    }

    func record(tx: IndexTransaction, anyUploads: Bool) throws {
        let current = try tx.removeEntry(entry)
        if storedAsSent {
            try recordStoredAsSent(tx: tx, current: current)
            return
        }
        var baseText = self.baseText
        var baseHash = self.baseHash
        if let wire, anyUploads || FileReference.mayAppear(in: entry.payload) {
            // The folder holds file references where the server holds URLs: the base keeps the references.
            guard let doc = try tx.document(id: entry.docID) else { return }
            if let local = try? JSONParser.parse(doc.body).object {
                let text = JSONWriter.string(.object(AttachmentMapping(try tx.uploads(docID: doc.id)).toLocal(wire, local: local)))
                baseText = text
                baseHash = ContentHash.sha256Hex(text.utf8)
            }
        }
        try tx.recordAcknowledged(
            id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: serverRev, base: baseText, baseHash: baseHash,
            current: current)
    }

    /// The base is the body that was queued (references and all, as the folder holds it). When
    /// the document still has that body (nearly always) only the flag is set; otherwise the
    /// sent body is taken back out of the payload.
    private func recordStoredAsSent(tx: IndexTransaction, current: Bool) throws {
        if try tx.recordAcknowledged(
            id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: serverRev, ifBodyHash: entry.documentHash, current: current)
        {
            return
        }
        guard case .object(let object)? = try? JSONParser.parse(entry.payload), let docType = object["docType"]?.string else { return }
        let text = JSONWriter.string(.object(WireForm.body(object, docType: docType)))
        try tx.recordAcknowledged(
            id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: serverRev, base: text,
            baseHash: ContentHash.sha256Hex(text.utf8), current: current)
    }
}
