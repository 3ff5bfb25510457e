import DocsyncModel
import DocsyncSchema
import Testing

/// What the suite does not ask: messages a person reads, exact numbers, and bounds against
/// schemas written to hurt (a schema is a document any client or server can send).
@Suite struct SchemaValidatorTests {
    private func violations(_ schema: String, _ document: String, assertFormats: Bool = false) throws -> [SchemaViolation] {
        let compiled = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/t", value: try JSONParser.parse(schema))], assertFormats: assertFormats)
        return compiled.violations(of: try JSONParser.parse(document), against: "docsync:schema/t")
    }

    @Test func aViolationNamesThePointerTheKeywordAndWhatWasWrong() throws {
        let found = try violations(
            #"{"properties": {"total": {"type": "number"}, "lines": {"items": {"required": ["sku"]}}}, "additionalProperties": false}"#,
            #"{"total": "12.50", "lines": [{"sku": "a"}, {}], "titel": "x"}"#)
        #expect(found.map(\.description) == [
            #"/total: expected a number, got the string "12.50""#,
            #"/lines/1: the required property "sku" is missing"#,
            #"/titel: the property "titel" is not allowed here"#,
        ])
        #expect(found.map(\.keyword) == ["type", "required", "additionalProperties"])
    }

    @Test func numbersAreComparedExactlyNotAsDoubles() throws {
        // 2^63 + 1 is above the maximum 2^63 although both are the same Double.
        #expect(try violations(#"{"maximum": 9223372036854775808}"#, "9223372036854775809").count == 1)
        #expect(try violations(#"{"maximum": 9223372036854775808}"#, "9223372036854775808").isEmpty)
        #expect(try violations(#"{"const": 1}"#, "1.0").isEmpty)
        #expect(try violations(#"{"enum": [100]}"#, "1e2").isEmpty)
        #expect(try violations(#"{"multipleOf": 0.01}"#, "12.34").isEmpty)
        #expect(try violations(#"{"multipleOf": 0.01}"#, "12.345").count == 1)
        #expect(try violations(#"{"type": "integer"}"#, "12345678901234567890123.0").isEmpty)
        #expect(try violations(#"{"multipleOf": 3}"#, "1e400").count == 1)
        #expect(try violations(#"{"uniqueItems": true}"#, "[1, 1.0]").count == 1)
    }

    @Test func formatsAreAnnotationsUnlessAsserted() throws {
        let schema = #"{"properties": {"on": {"format": "date"}, "by": {"format": "email"}, "ref": {"format": "uuid"}}}"#
        let document = #"{"on": "2026-02-30", "by": "nobody", "ref": "x"}"#
        #expect(try violations(schema, document).isEmpty)
        #expect(try violations(schema, document, assertFormats: true).map(\.instance) == ["/on", "/by", "/ref"])
        #expect(try violations(schema, #"{"on": "2028-02-29"}"#, assertFormats: true).isEmpty)
    }

    @Test func aSchemaThatRefersToItselfForeverEndsWithAViolation() throws {
        let found = try violations(##"{"$ref": "#"}"##, "{}")
        #expect(found.count == 1 && found[0].message.contains("levels deep"))
        let loop = try violations(##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "anyOf": [{"$ref": "#/$defs/a"}]}"##, "1")
        #expect(!loop.isEmpty)
    }

    @Test func aLongChainOfReferencesIsBoundedNotAStackOverflow() async throws {
        // 50,000 definitions, each referring to the next: compiling is a loop, checking stops at the depth bound.
        var members: [(key: String, value: JSONValue)] = []
        for i in 0..<50_000 { members.append((key: "d\(i)", value: .object(JSONObject([(key: "$ref", value: .string("#/$defs/d\(i + 1)"))])))) }
        members.append((key: "d50000", value: .bool(true)))
        let schema = JSONValue.object(JSONObject([(key: "$defs", value: .object(JSONObject(members))), (key: "$ref", value: "#/$defs/d0")]))
        let compiled = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/chain", value: schema)])
        // Run on a task of the cooperative pool, whose threads have the smallest stacks here.
        let found = await Task { compiled.violations(of: "x", against: "docsync:schema/chain") }.value as [SchemaViolation]
        #expect(found.count == 1 && found[0].keyword == "$ref")
    }

    @Test func theDeepestDocumentAgainstARecursiveSchemaIsChecked() async throws {
        // As deep as a document may be (the parser's bound), two nodes a level: within the evaluator's bound.
        let depth = JSONParser.maxDepth - 1
        let text = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
        let compiled = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/deep", value: try JSONParser.parse(##"{"type": "array", "items": {"$ref": "#"}}"##))])
        let document = try JSONParser.parse(text)
        let found = await Task { compiled.violations(of: document, against: "docsync:schema/deep") }.value as [SchemaViolation]
        #expect(found.count == 1 && found[0].instance.hasPrefix("/0/0/0"))
        #expect(compiled.conforms(try JSONParser.parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)), to: "docsync:schema/deep"))
    }

    @Test func hugeSchemasAndPatternsAreRefusedWithTheReason() throws {
        let many = JSONValue.object(JSONObject([(key: "anyOf", value: .array(Array(repeating: .object(JSONObject()), count: 250_000)))]))
        #expect(throws: SchemaProblem.self) { try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/many", value: many)]) }
        let pattern = JSONValue.object(JSONObject([(key: "pattern", value: .string(String(repeating: "a", count: 10_000)))]))
        do {
            _ = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/p", value: pattern)])
            Issue.record("a 10,000-byte pattern was compiled")
        } catch {
            #expect(error.description.contains("at most 4096"))
        }
        #expect(throws: SchemaProblem.self) {
            try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/r", value: try JSONParser.parse(#"{"$ref": "other#/x"}"#))])
        }
    }

    /// Trust finding (fourth round, 1): `^(a|a)+$` was not among the refused shapes, and four
    /// documents of forty `a`s and a `!` held a server's cores for minutes; `^(.*a){25}$` hung
    /// `docsync validate`. Patterns are now matched by PCRE2 under a limit, and a document's check
    /// has a budget: whatever the pattern, the check ends, with the budget's violation when the
    /// pattern would backtrack past it.
    @Test(arguments: [
        (#"^(a|a)+$"#, String(repeating: "a", count: 40) + "!"), (#"^(.*a){25}$"#, String(repeating: "a", count: 60) + "b"),
        (#"^(a+)+$"#, String(repeating: "a", count: 40) + "b"), (#"^(\w+\s?)*$"#, String(repeating: "ab ", count: 30) + "!"),
        (#"^([a-z]+)*[0-9]$"#, String(repeating: "abcdefghij", count: 4) + "!"),
    ])
    func aPatternThatBacktracksWithoutEndRunsOutOfBudgetInsteadOfHanging(pattern: String, text: String) throws {
        let schema = JSONValue.object(JSONObject([(key: "pattern", value: .string(pattern))]))
        let compiled = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/redos", value: schema)])
        var budget = CheckBudget()
        let violations = compiled.violations(of: .string(text), against: "docsync:schema/redos", budget: &budget)
        #expect(violations.map(\.keyword) == [SchemaViolation.overBudgetKeyword], "\(violations)")
        #expect(violations.first?.message.contains("simplify the schema's patterns") == true)
        #expect(!compiled.conforms(.string(text), to: "docsync:schema/redos"))
    }

    /// Subschemas that apply each other twice over, forty levels deep: 2^40 evaluations without a
    /// bound, each of them cheap. They draw on the same budget as patterns.
    @Test func subschemasThatMultiplyEachOtherRunOutOfBudget() throws {
        var defs = [(key: "l0", value: JSONValue.object(JSONObject([(key: "type", value: "string")])))]
        for level in 1...40 {
            let ref = JSONValue.object(JSONObject([(key: "$ref", value: .string("#/$defs/l\(level - 1)"))]))
            defs.append((key: "l\(level)", value: .object(JSONObject([(key: "anyOf", value: .array([ref, ref]))]))))
        }
        let schema = JSONValue.object(JSONObject([(key: "$defs", value: .object(JSONObject(defs))), (key: "$ref", value: "#/$defs/l40")]))
        let compiled = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/wide", value: schema)])
        #expect(compiled.violations(of: .number("1"), against: "docsync:schema/wide").map(\.keyword) == [SchemaViolation.overBudgetKeyword])
        #expect(compiled.conforms(.string("x"), to: "docsync:schema/wide"))
    }

    /// The same patterns on text they match at once, and a document of ten thousand strings
    /// under an ordinary pattern: the budget is for runaway work, not for large documents.
    @Test func ordinaryWorkStaysFarInsideTheBudget() throws {
        let schema = try JSONParser.parse(#"{"type": "array", "items": {"type": "string", "pattern": "^[a-z]+-[0-9]{1,6}$"}, "prefixItems": [{"pattern": "^(a|a)+$"}]}"#)
        let compiled = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/many", value: schema)])
        let strings = [JSONValue.string(String(repeating: "a", count: 40))] + (0..<10_000).map { JSONValue.string("item-\($0)") }
        var budget = CheckBudget()
        #expect(compiled.violations(of: .array(strings), against: "docsync:schema/many", budget: &budget).isEmpty)
        #expect(budget.remaining > CheckBudget.perDocument * 9 / 10, "an ordinary document used \(CheckBudget.perDocument - budget.remaining) of \(CheckBudget.perDocument)")
    }

    /// A schema is refused for its size before it is compiled: values past the limit, or more
    /// bytes of patterns than PCRE2 should compile for one set of schemas.
    @Test func aSchemaTooLargeToCompileCheaplyIsRefused() throws {
        let wide = JSONObject((0...DocTypeSchemas.maxSchemaValues).map { (key: "p\($0)", value: JSONValue.object(JSONObject())) })
        let body = JSONObject([(key: "id", value: "big"), (key: "docType", value: "schema"), (key: "properties", value: .object(wide))])
        #expect(DocTypeSchemas.violations(ofSchemaDocument: "big", body).first?.message.contains("at most \(DocTypeSchemas.maxSchemaValues)") == true)
        let pattern = String(repeating: "a", count: 4096)
        let many = JSONObject((0..<80).map { (key: "p\($0)", value: JSONValue.object(JSONObject([(key: "pattern", value: .string(pattern))]))) })
        #expect(throws: SchemaProblem.self) {
            try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/patterns", value: .object(JSONObject([(key: "properties", value: .object(many))])))])
        }
    }

    @Test(arguments: [#"^INV-[0-9]{4}-[0-9]+$"#, #"^([a-z]+\.)*[a-z]+$"#, #"^(ab)*$"#, #"[(+*]+"#, #"^a{2}(b)?$"#, #"\(a+\)+"#, #"^(a+)+$"#, #"^(\w+\s?)*$"#])
    func ordinaryPatternsAreKept(pattern: String) throws {
        let schema = JSONValue.object(JSONObject([(key: "pattern", value: .string(pattern))]))
        _ = try CompiledSchemas.compile([SchemaDocument(uri: "docsync:schema/ok", value: schema)])
    }

    @Test func schemasOfDocTypesReferToEachOtherAndABrokenOneIsLeftOut() throws {
        let schemas = DocTypeSchemas([
            "address": try JSONParser.parse(#"{"id": "address", "type": "object", "required": ["city"]}"#).object!,
            "invoice": try JSONParser.parse(#"{"id": "invoice", "docType": "schema", "properties": {"to": {"$ref": "address"}}}"#).object!,
            "broken": try JSONParser.parse(#"{"id": "broken", "type": "objekt"}"#).object!,
            "dangling": try JSONParser.parse(#"{"id": "dangling", "$ref": "nowhere"}"#).object!,
        ])
        #expect(schemas.docTypes == ["address", "invoice"])
        #expect(schemas.problems["broken"]?.first?.contains("/type") == true)
        #expect(schemas.problems["dangling"]?.first?.contains("nowhere") == true)
        let document = try JSONParser.parse(#"{"id": "i1", "docType": "invoice", "to": {"street": "x"}}"#).object!
        #expect(schemas.violations(of: document, docType: "invoice")?.map(\.description) == [#"/to: the required property "city" is missing"#])
        #expect(schemas.violations(of: document, docType: "note") == nil)
    }
}
