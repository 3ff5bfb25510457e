import DocsyncModel

/// The one writer into the folder (the engine's rule, docs/ARCHITECTURE.md): every path by which
/// what the server sent reaches a file — a pull's changes, a conflict's current version, a file
/// downloaded for a document — goes through here: under the tree lock, noted for the git history,
/// checked against the docTypes' schemas. Scans take the same lock through ``locked(_:)``, so
/// nothing writes the tree while a scan reads it and no caller needs to know whether it holds it.
/// Only this type calls the ``ChangeApplier``'s writes (`scripts/check-seams.sh` keeps it so).
struct FolderWriter: Sendable {
    let applier: ChangeApplier
    let lock: TreeLock
    /// Records what was written for the git history (`nil`: no git mode).
    let git: GitRecorder?
    /// Checks what was written against the docTypes' schemas.
    let schemas: SchemaCheck
    /// A catch-up's page whose record is still being committed (see ``PendingRecords``).
    let records = PendingRecords()

    /// Documents from the server applied, with `applier` where another selection's applies them
    /// (a grown selection's catch-up). `pipelined` (a page with more to follow): the new
    /// documents' record may still be committing when this returns, while the next page is
    /// written; not with git history, which reads what was recorded.
    func apply(_ documents: [JSONObject], with other: ChangeApplier? = nil, pipelined: Bool = false) async throws -> ChangeApplier.Summary {
        let applier = other ?? self.applier
        let pipelined = pipelined && git == nil
        return try await lock.run(after: pipelined ? nil : records) { [git, schemas, records] in
            let before = try await git?.before(documents)
            let summary = try await applier.apply(documents, records: pipelined ? records : nil)
            if let git, let before { try await git.after(documents, before: before) }
            try await schemas.checkPulled(documents, after: pipelined ? records : nil)
            return summary
        }
    }

    /// `work` (storing the cursor past a page) once the pages before it are recorded.
    func afterRecords(_ work: @escaping @Sendable () async throws -> Void) async throws {
        try await records.append(work)
    }

    /// Waits until every page is recorded; throws the failure of one that could not be.
    func drainRecords() async throws {
        try await records.drain()
    }

    /// Waits until every page is recorded or failed (a failure stays for ``drainRecords()``).
    func settleRecords() async {
        await records.settle()
    }

    /// A file downloaded for document `id` (of `docType`) placed by `body`, which writes it and the
    /// document's reference to it; the document's change is noted for git as a pulled one.
    func placeDownload<T: Sendable>(for id: String, docType: String, _ body: @Sendable @escaping (ChangeApplier) async throws -> T) async throws -> T {
        let document = JSONObject([(key: "id", value: .string(id)), (key: "docType", value: .string(docType))])
        return try await lock.run(after: records) { [applier, git] in
            let before = try await git?.before([document])
            let result = try await body(applier)
            if let git, let before { try await git.after([document], before: before) }
            return result
        }
    }

    /// What the folder's own writers that are not the server's (a scan writing an id into a file,
    /// a held deletion restored) do under the same lock.
    func locked<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await lock.run(after: records, body)
    }
}
