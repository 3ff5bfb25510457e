import DocsyncIndex
import DocsyncModel
import DocsyncSchema
import Logging

/// Keeps what `status` says about schemas true as schemas and documents change (see
/// docs/SCHEMAS.md): a save is checked by the scanner as it is read; this checks what arrives
/// from the server, and a docType again when its schema changes.
///
/// - A pulled document that fails is written (the server holds it) and reported.
/// - A schema that changed (saved here or pulled) has the synced documents of its docType checked
///   again, page by page: those that fail are reported, never deleted or held back from pulls;
///   saves held back under the old schema are read again (their stat marked unsettled).
struct SchemaCheck: FolderPart {
    /// The folder's shared values, read through ``FolderPart``.
    let context: FolderContext
    let book = SchemaBook()
    /// Told when a pulled change wrote a schema document: the agent then calls ``refresh()``.
    let changed: WakeSignal
    /// `format` asserted, not only an annotation (`--assert-formats`).
    let assertFormats: Bool

    /// Documents read per index query while checking a docType again.
    static let pageSize = 500

    /// Loads the schema documents into the book and checks again every docType whose schema is
    /// not the one the folder was last checked against. Returns how many held saves are to be
    /// read again.
    @discardableResult
    func refresh() async throws -> Int {
        let edition = try await reload()
        let checked = try await index.read { tx in Self.parse(try tx.meta(.schemasChecked)) }
        let changedTypes = Set(checked.keys).union(edition.sources.keys).filter { checked[$0] != edition.sources[$0] }
        guard !changedTypes.isEmpty else { return 0 }
        var marked = 0
        for docType in changedTypes.sorted() { marked += try await recheck(docType, schemas: edition.schemas) }
        let text = Self.format(edition.sources)
        try await index.write { tx in try tx.setMeta(.schemasChecked, text.isEmpty ? nil : text) }
        return marked
    }

    /// The book made again from the index's schema documents, when they differ from its edition.
    private func reload() async throws -> SchemaBook.Edition {
        let bodies = try await index.read { tx in
            var bodies: [String: String] = [:]
            var after = ""
            while true {
                let page = try tx.liveDocuments(ofType: DocTypeSchemas.docType, after: after, limit: Self.pageSize)
                for document in page { bodies[document.id] = document.body }
                guard page.count == Self.pageSize, let last = page.last else { return bodies }
                after = last.id
            }
        }
        let sources = bodies.mapValues { ContentHash.sha256Hex($0.utf8) }
        var edition = book.edition
        guard edition.sources != sources else { return edition }
        let objects = bodies.compactMapValues { (try? JSONParser.parse($0))?.object }
        edition = SchemaBook.Edition(schemas: DocTypeSchemas(objects, assertFormats: assertFormats), sources: sources)
        book.replace(edition)
        for (id, reasons) in edition.schemas.problems.sorted(by: { $0.key < $1.key }) {
            logger.warning("the schema of \(id) cannot be used: \(reasons.joined(separator: "; "))")
        }
        return edition
    }

    /// Checks the synced documents of `docType` again and marks its held saves to be read again.
    private func recheck(_ docType: String, schemas: DocTypeSchemas) async throws -> Int {
        var after = ""
        var failing = 0
        while true {
            let page = try await index.read { [after] tx in try tx.liveDocuments(ofType: docType, after: after, limit: Self.pageSize) }
            let verdicts = try Self.judge(page.map { ($0.id, $0.path, $0.body, docType) }) { schemas.violations(of: $0, docType: $1) }
            failing += verdicts.filter { !$0.errors.isEmpty }.count
            try await record(verdicts)
            guard page.count == Self.pageSize, let last = page.last else { break }
            after = last.id
        }
        if failing > 0 {
            logger.warning("\(failing) synced documents of \(docType) do not conform to its schema; they stay as they are (see `docsync status`)")
        }
        return try await index.write { tx in
            let held = try tx.heldSchemaPaths(docType: docType)
            for path in held { try tx.markUnsettled(path: path) }
            return held.count
        }
    }

    /// Checks the documents of a pulled batch that were written and have a schema (or are one).
    /// With `records` (a page still being recorded), their rows are read once it is.
    func checkPulled(_ batch: [JSONObject], after records: PendingRecords? = nil) async throws {
        let schemaTypes = book.edition.schemas.docTypes
        var ids: [String] = []
        var wroteSchema = false
        for change in batch {
            guard let docType = change["docType"]?.string, let id = change["id"]?.string else { continue }
            if docType == DocTypeSchemas.docType { wroteSchema = true }
            if docType == DocTypeSchemas.docType || schemaTypes.contains(docType) { ids.append(id) }
        }
        if !ids.isEmpty {
            try await records?.drain()
            let rows = try await index.read { [ids] tx in Array(try tx.documents(ids: ids).values.filter { $0.deletedAt == nil }) }
            let book = self.book
            let verdicts = try Self.judge(rows.map { ($0.id, $0.path, $0.body, $0.docType) }) { book.violations(of: $0, docType: $1) }
            try await record(verdicts)
            for verdict in verdicts where !verdict.errors.isEmpty {
                logger.warning(
                    "pulled document does not conform to its schema; written as the server holds it: \(verdict.errors.map(\.description).joined(separator: "; "))",
                    metadata: ["file.path": "\(verdict.path)"])
            }
        }
        if wroteSchema { changed.signal() }
    }

    /// A synced document's verdict: its violations (none: it passes).
    struct Verdict: Sendable {
        var path: String
        var id: String
        var docType: String
        var errors: [SchemaViolation]
    }

    /// The verdicts of `documents` (id, path, body, docType; one without a file or not an object
    /// has none), judged outside any index transaction: a costly schema held the index's writer,
    /// and a stop, for the whole batch. A stop is not kept waiting for the rest of the documents
    /// either: each spends its own budget.
    private static func judge(
        _ documents: [(id: String, path: String?, body: String, docType: String)], by violations: (JSONObject, String) -> [SchemaViolation]?
    ) throws -> [Verdict] {
        var verdicts: [Verdict] = []
        for document in documents {
            try Task.checkCancellation()
            guard let path = document.path, let object = (try? JSONParser.parse(document.body))?.object else { continue }
            verdicts.append(Verdict(path: path, id: document.id, docType: document.docType, errors: violations(object, document.docType) ?? []))
        }
        return verdicts
    }

    /// Each verdict reported when it fails, cleared when it passes (a held save at the same path
    /// is the file's own verdict and stays).
    private func record(_ verdicts: [Verdict]) async throws {
        try await index.write { tx in
            for v in verdicts {
                if v.errors.isEmpty {
                    try tx.clearReportedSchemaViolation(path: v.path)
                } else {
                    try tx.reportSchemaViolation(IndexTransaction.SchemaViolationRow(
                        path: v.path, docID: v.id, docType: v.docType, held: false, errors: SchemaViolation.text(v.errors)))
                }
            }
        }
    }

    /// `id hash` lines, sorted.
    static func format(_ sources: [String: String]) -> String {
        sources.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n")
    }

    static func parse(_ text: String?) -> [String: String] {
        var out: [String: String] = [:]
        for line in (text ?? "").split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { out[String(parts[0])] = String(parts[1]) }
        }
        return out
    }
}
