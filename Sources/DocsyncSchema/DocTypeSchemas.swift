import DocsyncModel

/// The schemas of a folder or a server: documents of docType `schema`, each the JSON Schema of the
/// docType its `id` names (`schema/invoice.json` with `"id": "invoice"` describes `invoice`).
///
/// Built once from all of them (schemas may refer to each other by `$id`, or by
/// `docsync:schema/<docType>`, the name each one has without an `$id`). A schema that is not a
/// valid draft 2020-12 schema is left out and reported; the others still apply.
public struct DocTypeSchemas: Sendable {
    /// The docType of schema documents.
    public static let docType = "schema"

    /// A document's fields that are not its content: identity and the sync layer's stamps. They
    /// are neither keywords of a schema document nor checked in a document.
    public static func isBookkeeping(_ key: String) -> Bool {
        key == "id" || key == "docType" || DocumentRules.isReserved(key)
    }

    /// The URI a schema is known by when it has no `$id`.
    public static func uri(ofDocType docType: String) -> String { "docsync:schema/\(docType)" }

    /// Schema documents that cannot be used, by id, with the reasons.
    public private(set) var problems: [String: [String]] = [:]
    private var compiled: CompiledSchemas?
    private var uris: [String: String] = [:]

    public init() {}

    /// `schemas` maps each schema document's id to its body (as the file or the server holds it).
    public init(_ schemas: [String: JSONObject], assertFormats: Bool = false) {
        var documents: [String: SchemaDocument] = [:]
        for (id, body) in schemas {
            if let why = Self.problem(ofSchemaDocument: id, body) {
                problems[id] = why
            } else {
                documents[id] = SchemaDocument(uri: Self.uri(ofDocType: id), value: .object(Self.content(of: body)))
            }
        }
        // A schema that does not compile (a `$ref` to nothing, a bad pattern) is dropped and the
        // rest compiled again, so one broken schema does not take the others with it.
        while !documents.isEmpty {
            let ordered = documents.sorted { $0.key < $1.key }
            do {
                compiled = try CompiledSchemas.compile(ordered.map(\.value), assertFormats: assertFormats)
                uris = Dictionary(uniqueKeysWithValues: ordered.map { ($0.key, $0.value.uri) })
                return
            } catch {
                let culprit = ordered[error.document.flatMap { ordered.indices.contains($0) ? $0 : nil } ?? 0].key
                problems[culprit, default: []].append(error.description)
                documents[culprit] = nil
            }
        }
    }

    /// The docTypes with a usable schema.
    public var docTypes: Set<String> { Set(uris.keys) }

    public var isEmpty: Bool { uris.isEmpty }

    /// How `document` (of `docType`) fails its schema: nil when the docType has none, empty when
    /// it conforms.
    public func violations(of document: JSONObject, docType: String, limit: Int = 20) -> [SchemaViolation]? {
        var budget = CheckBudget()
        return violations(of: document, docType: docType, limit: limit, budget: &budget)
    }

    /// As above, paid from `budget` (``CheckBudget``), which keeps what the check left.
    public func violations(of document: JSONObject, docType: String, limit: Int = 20, budget: inout CheckBudget) -> [SchemaViolation]? {
        guard let uri = uris[docType], let compiled else { return nil }
        return compiled.violations(of: .object(Self.content(of: document)), against: uri, maxViolations: limit, budget: &budget)
    }

    /// Whether `document` conforms (true when its docType has no schema), without messages.
    public func conforms(_ document: JSONObject, docType: String) -> Bool {
        guard let uri = uris[docType], let compiled else { return true }
        return compiled.conforms(.object(Self.content(of: document)), to: uri)
    }

    /// The document without its bookkeeping fields.
    public static func content(of document: JSONObject) -> JSONObject {
        guard document.members.contains(where: { isBookkeeping($0.key) }) else { return document }
        return JSONObject(document.members.filter { !isBookkeeping($0.key) })
    }

    /// Why a schema document cannot be used on its own: its id is not a docType, or it is not a
    /// valid draft 2020-12 schema (checked against the meta-schema).
    public static func problem(ofSchemaDocument id: String, _ body: JSONObject) -> [String]? {
        let violations = violations(ofSchemaDocument: id, body)
        guard !violations.isEmpty else { return nil }
        return violations.map { $0.keyword == "id" ? $0.message : "\(failing(docType: Self.docType)): \($0.description)" }
    }

    /// What a document of `docType` that fails is, in words: for a schema document, the
    /// meta-schema's verdict. The start of every message about one.
    public static func failing(docType: String) -> String {
        docType == Self.docType ? "not a valid JSON Schema (draft 2020-12)" : "does not conform to the schema of \(docType)"
    }

    /// As ``problem(ofSchemaDocument:_:)``, each as a violation whose instance is the place in the
    /// schema document (empty when it conforms).
    public static func violations(ofSchemaDocument id: String, _ body: JSONObject) -> [SchemaViolation] {
        var budget = CheckBudget()
        return violations(ofSchemaDocument: id, body, budget: &budget)
    }

    /// As above, paid from `budget`. A schema over ``maxSchemaValues`` values is refused before
    /// it is read further: compiling it and loading it with the others would cost in proportion.
    public static func violations(ofSchemaDocument id: String, _ body: JSONObject, budget: inout CheckBudget) -> [SchemaViolation] {
        if let why = DocumentRules.docTypeProblem(id) {
            return [SchemaViolation(instance: "/id", keyword: "id", message: "its id \(Quote.text(id)) is not a docType: \(why)")]
        }
        let content = content(of: body)
        if let count = SchemaSize.valuesPast(maxSchemaValues, in: .object(content)) {
            return [SchemaViolation(instance: "", keyword: "schema", message: "a schema of more than \(count - 1) values (at most \(maxSchemaValues)); split it into schemas that refer to each other")]
        }
        return metaSchema.violations(of: .object(content), against: CompiledSchemas.draft202012, maxViolations: 20, budget: &budget)
    }

    /// The most JSON values (objects, arrays, strings, numbers…) one schema document may hold:
    /// far beyond a hand-written schema, and small enough that compiling one takes milliseconds.
    public static let maxSchemaValues = 50_000

    /// The meta-schemas alone, compiled once per process.
    static let metaSchema: CompiledSchemas = {
        // The embedded meta-schemas compile; the conformance tests hold them to it.
        try! CompiledSchemas.compile([])
    }()
}
