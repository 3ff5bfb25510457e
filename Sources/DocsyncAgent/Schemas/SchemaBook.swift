import DocsyncModel
import DocsyncSchema
import Synchronization

/// The folder's schemas as the agent holds them: read by the scanner's readers (a save of a
/// docType with a schema is checked where it is read, off the index's writer) and replaced by
/// ``SchemaCheck`` when a schema document changes.
final class SchemaBook: Sendable {
    struct Edition: Sendable {
        var schemas = DocTypeSchemas()
        /// The body hash of each schema document the edition was made from, by id.
        var sources: [String: String] = [:]
    }

    private let current = Mutex(Edition())

    init() {}

    var edition: Edition { current.withLock { $0 } }

    func replace(_ edition: Edition) {
        current.withLock { $0 = edition }
    }

    /// How a document just read fails: its docType's schema, or for a schema document the
    /// meta-schema. `nil` when nothing applies (no schema for the docType).
    func violations(of object: JSONObject, docType: String) -> [SchemaViolation]? {
        if docType == DocTypeSchemas.docType {
            return DocTypeSchemas.violations(ofSchemaDocument: object["id"]?.string ?? "", object)
        }
        let schemas = current.withLock { $0.schemas }
        guard !schemas.isEmpty else { return nil }
        return schemas.violations(of: object, docType: docType)
    }

    /// The error text of a file held back, one line a person reads.
    static func reason(_ violations: [SchemaViolation], docType: String) -> String {
        "\(DocTypeSchemas.failing(docType: docType)): " + violations.map(\.description).joined(separator: "; ")
    }
}
