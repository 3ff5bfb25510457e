import DocsyncModel

/// The validation vocabulary's keywords, read into a node.
extension SchemaCompiler {
    func compileValidation(_ object: JSONObject, into node: SchemaNode) throws(SchemaProblem.Reason) {
        if let type = object["type"] { node.types = try Self.types(type) }
        if let values = object["enum"] {
            guard case .array(let elements) = values else { throw .badValue("enum must be an array") }
            node.enumValues = elements
        }
        node.constValue = object["const"]
        node.numeric = try Self.numericBounds(object)
        node.minLength = try Self.count(object, "minLength")
        node.maxLength = try Self.count(object, "maxLength")
        if let pattern = object["pattern"] {
            guard case .string(let text) = pattern else { throw .badValue("pattern must be a string") }
            node.pattern = try self.pattern(text)
        }
        node.minItems = try Self.count(object, "minItems")
        node.maxItems = try Self.count(object, "maxItems")
        node.minContains = try Self.count(object, "minContains")
        node.maxContains = try Self.count(object, "maxContains")
        node.minProperties = try Self.count(object, "minProperties")
        node.maxProperties = try Self.count(object, "maxProperties")
        if let unique = object["uniqueItems"] {
            guard case .bool(let flag) = unique else { throw .badValue("uniqueItems must be a boolean") }
            node.uniqueItems = flag
        }
        if let required = object["required"] { node.required = try Self.names(required, "required") }
        if let dependent = object["dependentRequired"] {
            guard case .object(let map) = dependent else { throw .badValue("dependentRequired must be an object") }
            node.dependentRequired = try map.members.map { member throws(SchemaProblem.Reason) in
                (key: member.key, names: try Self.names(member.value, "dependentRequired/\(member.key)"))
            }
        }
    }

    private static func types(_ value: JSONValue) throws(SchemaProblem.Reason) -> TypeSet {
        let names: [JSONValue] = value.elements ?? [value]
        var set = TypeSet()
        for name in names {
            guard case .string(let text) = name, let type = TypeSet(name: text) else {
                throw .badValue("type \(Quote.json(name)) is not one of null, boolean, object, array, number, string, integer")
            }
            set.insert(type)
        }
        return set
    }

    private static func numericBounds(_ object: JSONObject) throws(SchemaProblem.Reason) -> NumericBounds {
        func number(_ key: String) throws(SchemaProblem.Reason) -> ExactNumber? {
            guard let value = object[key] else { return nil }
            guard let n = ExactNumber(value) else { throw .badValue("\(key) must be a number") }
            return n
        }
        var bounds = NumericBounds()
        bounds.multipleOf = try number("multipleOf")
        if let m = bounds.multipleOf, m.isZero || m.negative { throw .badValue("multipleOf must be greater than 0") }
        bounds.minimum = try number("minimum")
        bounds.maximum = try number("maximum")
        bounds.exclusiveMinimum = try number("exclusiveMinimum")
        bounds.exclusiveMaximum = try number("exclusiveMaximum")
        return bounds
    }

    private static func count(_ object: JSONObject, _ key: String) throws(SchemaProblem.Reason) -> Int? {
        guard let value = object[key] else { return nil }
        guard let n = ExactNumber(value)?.count else { throw .badValue("\(key) must be a non-negative integer") }
        return n
    }

    private static func names(_ value: JSONValue, _ key: String) throws(SchemaProblem.Reason) -> [String] {
        guard case .array(let elements) = value else { throw .badValue("\(key) must be an array of strings") }
        return try elements.map { element throws(SchemaProblem.Reason) in
            guard case .string(let s) = element else { throw .badValue("\(key) must be an array of strings") }
            return s
        }
    }
}
