import DocsyncModel

/// The compile pass: each node's keywords read into its fields. Keywords the draft does not know
/// are ignored, as the draft says; a known keyword with a value it does not allow is a problem.
extension SchemaCompiler {
    func compileNode(_ index: Int) throws(SchemaProblem) {
        let source = sources[index], node = nodes[index]
        do throws(SchemaProblem.Reason) {
            switch source.value {
            case .bool(true): node.form = .always
            case .bool(false): node.form = .never
            case .object(let object): try compileKeywords(object, into: node, source: source)
            default: throw .badValue("a schema is an object or a boolean, not \(source.value.kindName)")
            }
        } catch {
            throw SchemaProblem(location: node.location, reason: error, document: source.document - CompiledSchemas.metaDocuments.count)
        }
    }

    private func compileKeywords(_ object: JSONObject, into node: SchemaNode, source: Source) throws(SchemaProblem.Reason) {
        let vocabulary = vocabulary(of: node.resource)
        let validation = vocabulary?.contains("https://json-schema.org/draft/2020-12/vocab/validation") ?? true
        node.assertsFormat = assertFormats
            || vocabulary?.contains("https://json-schema.org/draft/2020-12/vocab/format-assertion") == true
        try compileReferences(object, into: node, source: source)
        try compileApplicators(object, into: node, source: source)
        if validation { try compileValidation(object, into: node) }
        if case .string(let format)? = object["format"] { node.format = format }
    }

    func child(_ source: Source, _ tokens: String...) -> Int {
        let path = source.path + tokens.map { "/" + $0.pointerEscaped }.joined()
        return nodeByPath[Self.pathKey(source.document, path)]!
    }

    private func compileReferences(_ object: JSONObject, into node: SchemaNode, source: Source) throws(SchemaProblem.Reason) {
        if let ref = object["$ref"] {
            guard case .string(let text) = ref else { throw .badValue("$ref is \(ref.kindName), not a string") }
            node.ref = try resolve(text, from: source.base)
        }
        if case .string(let name)? = object["$dynamicAnchor"] { node.dynamicAnchor = name }
        if let ref = object["$dynamicRef"] {
            guard case .string(let text) = ref else { throw .badValue("$dynamicRef is \(ref.kindName), not a string") }
            let target = try resolve(text, from: source.base)
            let fragment = SchemaURI(text).fragment
            // Dynamic only when the first target itself declares the anchor (2020-12's bookending).
            let dynamic = fragment.flatMap { name in sources[target].value.object?["$dynamicAnchor"]?.string == name ? name : nil }
            node.dynamicRef = DynamicReference(target: target, anchor: dynamic)
        }
    }

    private func compileApplicators(_ object: JSONObject, into node: SchemaNode, source: Source) throws(SchemaProblem.Reason) {
        func single(_ key: String) -> Int? { object[key] == nil ? nil : child(source, key) }
        func list(_ key: String) throws(SchemaProblem.Reason) -> [Int] {
            guard let value = object[key] else { return [] }
            guard case .array(let elements) = value, !elements.isEmpty || key == "prefixItems" else {
                throw .badValue("\(key) must be a non-empty array of schemas")
            }
            return elements.indices.map { child(source, key, String($0)) }
        }
        func map(_ key: String) throws(SchemaProblem.Reason) -> [(String, Int)] {
            guard let value = object[key] else { return [] }
            guard case .object(let members) = value else { throw .badValue("\(key) must be an object") }
            return members.keys.map { ($0, child(source, key, $0)) }
        }
        node.allOf = try list("allOf")
        node.anyOf = try list("anyOf")
        node.oneOf = try list("oneOf")
        node.prefixItems = try list("prefixItems")
        node.not = single("not")
        node.ifSchema = single("if")
        node.thenSchema = single("then")
        node.elseSchema = single("else")
        node.items = single("items")
        node.contains = single("contains")
        node.additionalProperties = single("additionalProperties")
        node.propertyNames = single("propertyNames")
        node.unevaluatedItems = single("unevaluatedItems")
        node.unevaluatedProperties = single("unevaluatedProperties")
        node.properties = Dictionary(try map("properties"), uniquingKeysWith: { first, _ in first })
        node.dependentSchemas = try map("dependentSchemas").map { (key: $0.0, node: $0.1) }
        node.patternProperties = try map("patternProperties").map { entry throws(SchemaProblem.Reason) in
            (pattern: try self.pattern(entry.0), node: entry.1)
        }
    }
}
