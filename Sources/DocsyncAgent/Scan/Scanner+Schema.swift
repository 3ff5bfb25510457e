import DocsyncIndex
import DocsyncModel
import DocsyncSchema

/// Recording a save against its docType's schema (see `SchemaCheck` for the rest of the rules).
extension Scanner {
    /// Holds back a save that fails its schema: the file is recorded `invalid` with every
    /// violation, the document (and the server's copy) stays as it was, nothing is queued.
    /// Returns false, leaving the save to be recorded, when it need not be held: it conforms (its
    /// old verdict is cleared), or it holds what the index already has (a synced document a new
    /// schema finds failing: reported, not held, never deleted).
    static func holdForSchema(
        _ o: Observed, _ document: Judged, previous: FileRow?, rows: inout ChunkRows, anyViolations: Bool, tx: IndexTransaction,
        result r: inout RecordResult
    ) throws -> Bool {
        guard let violations = o.violations, !violations.isEmpty else {
            if anyViolations { try tx.clearSchemaViolation(path: o.path) }
            return false
        }
        let errors = SchemaViolation.text(violations)
        let existing = try rows.document(id: document.id)
        let hash = try o.wire?.hash ?? wireText(o.object(), docType: document.docType).hash
        if let existing, existing.deletedAt == nil, existing.bodyHash == hash {
            try tx.setSchemaViolation(IndexTransaction.SchemaViolationRow(
                path: o.path, docID: document.id, docType: document.docType, held: false, errors: errors))
            return false
        }
        let reason = SchemaBook.reason(violations, docType: document.docType)
        if previous?.error != reason { r.newProblems.append((o.path, reason)) }
        rows.changing(path: o.path, id: previous?.docID)
        try tx.upsertFile(FileRow(
            path: o.path, docID: previous?.docID, docType: previous?.docType ?? document.docType, hash: o.hash, stat: o.stat, state: .invalid,
            error: reason))
        try tx.setSchemaViolation(IndexTransaction.SchemaViolationRow(
            path: o.path, docID: previous?.docID, docType: document.docType, held: true, errors: errors))
        r.counts.invalid += 1
        return true
    }
}
