import DocsyncFiles
import DocsyncModel

/// `docsync validate DIR`: every document of a folder against the folder's own schemas, with no
/// server and no index. Two walks, so memory holds the schemas and one document at a time
/// whatever the folder's size.
public struct FolderSchemaCheck: Sendable {
    /// A file that does not conform, is not a document, or is a schema that cannot be used.
    public struct Finding: Sendable {
        public var path: String
        public var errors: [SchemaViolation]
    }

    /// Documents read and judged (with or without a schema for their docType).
    public private(set) var checked = 0
    public private(set) var invalid: [Finding] = []
    public private(set) var schemaCount = 0

    public static func run(root: String, assertFormats: Bool = false, maxFileSize: Int = DocumentRules.defaultMaxFileSize) -> FolderSchemaCheck {
        let walker = TreeWalker(root: root, ignore: TreeWalker.ignoreRules(root: root))
        let paths = walker.walk().filter { $0.nameIsUTF8 && DocumentRules.isDocumentPath($0.path) }.map(\.path).sorted()
        var schemaBodies: [String: JSONObject] = [:]
        var schemaPaths: [String: String] = [:]
        var check = FolderSchemaCheck()
        for path in paths {
            guard case .success(let (object, docType)) = read(walker.absolute(path), relative: path, maxFileSize: maxFileSize),
                  docType == DocTypeSchemas.docType else { continue }
            guard case .string(let id)? = object["id"] else {
                let why = "a schema document needs an \"id\": the docType it describes"
                check.invalid.append(Finding(path: path, errors: [SchemaViolation(instance: "", keyword: "id", message: why)]))
                continue
            }
            schemaBodies[id] = object
            schemaPaths[id] = path
        }
        let schemas = DocTypeSchemas(schemaBodies, assertFormats: assertFormats)
        check.schemaCount = schemas.docTypes.count
        for path in paths {
            check.judge(path, read(walker.absolute(path), relative: path, maxFileSize: maxFileSize), schemas: schemas)
        }
        for (id, reasons) in schemas.problems.sorted(by: { $0.key < $1.key }) {
            let errors = reasons.map { SchemaViolation(instance: "", keyword: "schema", message: $0) }
            check.invalid.append(Finding(path: schemaPaths[id] ?? "schema/\(id).json", errors: errors))
        }
        check.invalid.sort { $0.path < $1.path }
        return check
    }

    private mutating func judge(_ path: String, _ read: Result<(JSONObject, String), DocumentProblem>, schemas: DocTypeSchemas) {
        checked += 1
        switch read {
        case .failure(let problem):
            invalid.append(Finding(path: path, errors: [SchemaViolation(instance: "", keyword: "document", message: problem.description)]))
        case .success(let (object, docType)):
            if let errors = schemas.violations(of: object, docType: docType), !errors.isEmpty {
                invalid.append(Finding(path: path, errors: errors))
            }
        }
    }

    private static func read(_ absolute: String, relative: String, maxFileSize: Int) -> Result<(JSONObject, String), DocumentProblem> {
        Result { () throws(DocumentProblem) in
            let object = try DocumentRules.parseObject(try FileSystem.read(absolute, maxSize: maxFileSize).bytes, maxSize: maxFileSize)
            return (object, try DocumentRules.docType(of: object, relativePath: relative))
        }
    }

    /// The JSON form: `{"checked": N, "invalid": [{"path", "errors": [{"instance", "keyword", "message"}]}]}`.
    public var json: JSONValue {
        let findings: [JSONValue] = invalid.map { finding in
            .object(JSONObject([(key: "path", value: .string(finding.path)), (key: "errors", value: .array(finding.errors.map(\.json)))]))
        }
        return .object(JSONObject([(key: "checked", value: .number(String(checked))), (key: "invalid", value: .array(findings))]))
    }

    /// The human form: one line per error, `path: /pointer: message`, then a summary.
    public var lines: [String] {
        var out = invalid.flatMap { finding in
            finding.errors.map { "\(finding.path): " + ($0.instance.isEmpty ? $0.message : $0.description) }
        }
        let schemas = schemaCount == 1 ? "1 schema" : "\(schemaCount) schemas"
        out.append(invalid.isEmpty ? "\(checked) documents checked against \(schemas): all conform"
                                   : "\(checked) documents checked against \(schemas): \(invalid.count) do not conform")
        return out
    }
}
