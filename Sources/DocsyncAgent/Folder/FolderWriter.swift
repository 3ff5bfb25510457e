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

    /// Documents from the server applied, with `applier` where another selection's applies them
    /// (a grown selection's catch-up).
    func apply(_ documents: [JSONObject], with other: ChangeApplier? = nil) async throws -> ChangeApplier.Summary {
        let applier = other ?? self.applier
        return try await lock.run { [git, schemas] in
            let before = try await git?.before(documents)
            let summary = try await applier.apply(documents)
            if let git, let before { try await git.after(documents, before: before) }
            try await schemas.checkPulled(documents)
            return summary
        }
    }

    /// A file downloaded for document `id` (of `docType`) placed by `body`, which writes it and the
    /// document's reference to it; the document's change is noted for git as a pulled one.
    func placeDownload<T: Sendable>(for id: String, docType: String, _ body: @Sendable @escaping (ChangeApplier) async throws -> T) async throws -> T {
        let document = JSONObject([(key: "id", value: .string(id)), (key: "docType", value: .string(docType))])
        return try await lock.run { [applier, git] in
            let before = try await git?.before([document])
            let result = try await body(applier)
            if let git, let before { try await git.after([document], before: before) }
            return result
        }
    }

    /// What the folder's own writers that are not the server's (a scan writing an id into a file,
    /// a held deletion restored) do under the same lock.
    func locked<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await lock.run(body)
    }
}
