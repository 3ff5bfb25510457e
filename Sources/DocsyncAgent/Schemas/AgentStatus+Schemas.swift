import DocsyncIndex
import DocsyncModel
import DocsyncSchema

/// What `status`, the page and `/status` say about schemas: saves held back (with every
/// violation) and synced documents that do not conform.
public struct SchemaStatus: Sendable {
    /// The violations of each held save, by path (the file is also among the invalid files).
    public var held: [String: [SchemaViolation]] = [:]
    /// Synced documents that fail their schema: the first few, and how many in all.
    public var nonconforming: [(path: String, docType: String, errors: [SchemaViolation])] = []
    public var nonconformingCount = 0

    /// Rows shown at most (the counts are exact).
    static let shown = 50

    public init() {}

    static func read(_ tx: IndexTransaction) throws -> SchemaStatus {
        var status = SchemaStatus()
        guard try tx.hasSchemaViolations() else { return status }
        for row in try tx.schemaViolations(held: true, limit: shown) { status.held[row.path] = SchemaViolation.parse(row.errors) }
        status.nonconforming = try tx.schemaViolations(held: false, limit: shown).map { ($0.path, $0.docType, SchemaViolation.parse($0.errors)) }
        status.nonconformingCount = try tx.schemaViolationCount(held: false)
        return status
    }

    /// `[{"path", "docType", "errors": [...]}]`.
    var nonconformingJSON: JSONValue {
        .array(nonconforming.map { entry in
            .object(JSONObject([
                (key: "path", value: .string(entry.path)), (key: "docType", value: .string(entry.docType)),
                (key: "errors", value: .array(entry.errors.map(\.json))),
            ]))
        })
    }

    /// The invalid files as JSON, a held save's entry with its violations.
    func invalidFilesJSON(_ files: [(path: String, reason: String)]) -> JSONValue {
        .array(files.map { file in
            var entry = JSONObject([(key: "path", value: .string(file.path)), (key: "reason", value: .string(file.reason))])
            if let errors = held[file.path] { entry["errors"] = .array(errors.map(\.json)) }
            return .object(entry)
        })
    }

    var lines: [String] {
        guard nonconformingCount > 0 else { return [] }
        var lines = ["\(nonconformingCount) synced documents do not conform to their docType's schema (kept as they are):"]
        for entry in nonconforming {
            let more = entry.errors.count > 1 ? " (and \(entry.errors.count - 1) more)" : ""
            lines.append("  \(entry.path): \(entry.errors.first?.description ?? "does not conform")\(more)")
        }
        if nonconformingCount > nonconforming.count { lines.append("  … and \(nonconformingCount - nonconforming.count) more") }
        return lines
    }
}
