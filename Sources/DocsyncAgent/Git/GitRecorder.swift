import DocsyncIndex
import DocsyncModel

/// Notes, for the git history (`--git-commit`, `--git-branch`), which pulled changes docsync
/// wrote into the folder: looked up in the index just before and just after a batch is applied
/// (under the tree lock, so nothing else writes between), and recorded for ``GitCommitter``.
///
/// Only what docsync wrote is recorded: a file whose bytes the applier did not change (the
/// server echoing this folder's own write), a merge with an edit not sent yet (the file holds the
/// user's change too: left to the user's next commit), and a conflict copy are not.
struct GitRecorder: Sendable {
    let index: Index
    /// Told when changes were recorded.
    let committer: WakeSignal

    /// A document as the index held it before the batch.
    struct Before: Sendable {
        var path: String?
        var fileHash: String?
        var body: String?
    }

    func before(_ batch: [JSONObject]) async throws -> [String: Before] {
        let ids = batch.compactMap { $0["id"]?.string }
        return try await index.read { tx in
            var found: [String: Before] = [:]
            for (id, doc) in try tx.documents(ids: ids) {
                let file = try tx.file(forDocument: id)
                found[id] = Before(path: doc.path, fileHash: file?.hash, body: doc.deletedAt == nil ? doc.body : nil)
            }
            return found
        }
    }

    func after(_ batch: [JSONObject], before: [String: Before]) async throws {
        let changes = try await index.read { tx in
            let docs = try tx.documents(ids: batch.compactMap { $0["id"]?.string })
            return try batch.compactMap { remote -> IndexTransaction.GitChange? in
                guard let id = remote["id"]?.string, let doc = docs[id] else { return nil }
                return try Self.change(remote, doc: doc, before: before[id], tx: tx)
            }
        }
        guard !changes.isEmpty else { return }
        try await index.write { try $0.recordGitChanges(changes) }
        committer.signal()
    }

    private static func change(_ remote: JSONObject, doc: DocumentRow, before: Before?, tx: IndexTransaction) throws -> IndexTransaction.GitChange? {
        let id = doc.id
        let author = remote[DocumentRules.updatedByKey]?.string
        let stamp = ChangeApplier.changeStamp(of: remote)
        if doc.deletedAt != nil {
            guard let gone = before?.path, doc.path == nil else { return nil }
            return .init(path: nil, oldPath: gone, fileHash: nil, docType: doc.docType, docID: id, author: author, changedAt: stamp, what: "deleted")
        }
        guard doc.state == .synced, let path = doc.path, let file = try tx.file(forDocument: id), let hash = file.hash,
              hash != before?.fileHash || path != before?.path
        else { return nil }
        let what = before?.body.map { changedFields(from: $0, to: doc.body) } ?? "new"
        return .init(
            path: path, oldPath: before?.path == path ? nil : before?.path, fileHash: hash, docType: doc.docType, docID: id, author: author,
            changedAt: stamp, what: what)
    }

    /// The top-level fields that differ between two bodies (`title, tags`), `moved` when none do.
    static func changedFields(from old: String, to new: String) -> String {
        guard let a = try? JSONParser.parse(old).object, let b = try? JSONParser.parse(new).object else { return "changed" }
        let (before, after) = (a.keyed, b.keyed)
        var keys: [String] = []
        for (key, value) in b.members where before[key] != value { keys.append(key) }
        for (key, _) in a.members where after[key] == nil { keys.append(key) }
        guard !keys.isEmpty else { return "moved" }
        let shown = keys.prefix(8).joined(separator: ", ")
        return keys.count > 8 ? shown + " and \(keys.count - 8) more" : shown
    }
}
