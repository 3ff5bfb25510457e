import DocsyncModel

/// Schemas compiled once and checked against many times; immutable, so one value serves every
/// thread. The draft 2020-12 meta-schemas are always part of it.
public struct CompiledSchemas: Sendable {
    public static let draft202012 = "https://json-schema.org/draft/2020-12/schema"

    let nodes: [SchemaNode]
    let resources: [SchemaResource]
    let roots: [String: Int]

    init(nodes: [SchemaNode], resources: [SchemaResource], roots: [String: Int]) {
        self.nodes = nodes
        self.resources = resources
        self.roots = roots
    }

    /// Compiles `documents` (each under its URI) with the meta-schemas. `assertFormats` makes
    /// `format` an assertion for the formats `SchemaFormats` knows.
    public static func compile(_ documents: [SchemaDocument], assertFormats: Bool = false) throws(SchemaProblem) -> CompiledSchemas {
        try SchemaCompiler(documents: metaDocuments + documents, assertFormats: assertFormats).compile()
    }

    /// The meta-schemas, parsed once per process.
    static let metaDocuments: [SchemaDocument] = MetaSchemas.all.map { entry in
        // Fixed text checked by the conformance tests; a failure here is a broken build.
        SchemaDocument(uri: entry.uri, value: try! JSONParser.parse(entry.text))
    }

    /// Whether a document was compiled under `uri`.
    public func contains(_ uri: String) -> Bool { roots[uri] != nil }

    /// How `instance` fails the schema compiled under `uri` (empty when it conforms), at most
    /// `maxViolations` of them, with a whole ``CheckBudget``. A `uri` that was not compiled is a
    /// programming error.
    public func violations(of instance: JSONValue, against uri: String, maxViolations: Int = 100) -> [SchemaViolation] {
        var budget = CheckBudget()
        return violations(of: instance, against: uri, maxViolations: maxViolations, budget: &budget)
    }

    /// As above, paid from `budget`, which is left with what the check did not use. A check that
    /// runs out reports that alone (`SchemaViolation.overBudgetKeyword`).
    public func violations(of instance: JSONValue, against uri: String, maxViolations: Int = 100, budget: inout CheckBudget) -> [SchemaViolation] {
        guard let root = roots[uri] else { preconditionFailure("no schema was compiled as \(uri)") }
        var evaluator = SchemaEvaluator(self, maxViolations: max(1, maxViolations), budget: budget)
        var ignored = Annotations()
        let valid = evaluator.evaluate(root, instance, annotate: false, into: &ignored)
        budget = evaluator.budget
        if evaluator.overBudget { return [SchemaEvaluator.overBudgetViolation] }
        if !valid && evaluator.violations.isEmpty {
            // Every failure was inside a probe; the document still fails, and says so.
            return [SchemaViolation(instance: "", keyword: "schema", message: "does not conform to the schema")]
        }
        return evaluator.violations
    }

    /// Whether `instance` conforms, without building any message.
    public func conforms(_ instance: JSONValue, to uri: String) -> Bool {
        guard let root = roots[uri] else { preconditionFailure("no schema was compiled as \(uri)") }
        var evaluator = SchemaEvaluator(self, maxViolations: 1, budget: CheckBudget())
        evaluator.quiet = 1
        var ignored = Annotations()
        return evaluator.evaluate(root, instance, annotate: false, into: &ignored) && !evaluator.tooDeep && !evaluator.overBudget
    }
}
