import DocsyncModel

/// The JSON types a `type` keyword names; `integer` is a number with no fractional part.
struct TypeSet: OptionSet, Sendable {
    let rawValue: UInt8
    static let null = TypeSet(rawValue: 1)
    static let boolean = TypeSet(rawValue: 2)
    static let object = TypeSet(rawValue: 4)
    static let array = TypeSet(rawValue: 8)
    static let number = TypeSet(rawValue: 16)
    static let string = TypeSet(rawValue: 32)
    static let integer = TypeSet(rawValue: 64)

    static let names: [(String, TypeSet)] = [
        ("null", .null), ("boolean", .boolean), ("object", .object), ("array", .array),
        ("number", .number), ("string", .string), ("integer", .integer),
    ]

    init(rawValue: UInt8) { self.rawValue = rawValue }

    init?(name: String) {
        guard let entry = Self.names.first(where: { $0.0 == name }) else { return nil }
        self = entry.1
    }

    /// Whether `value` is of one of the types.
    func admits(_ value: JSONValue) -> Bool {
        switch value {
        case .null: contains(.null)
        case .bool: contains(.boolean)
        case .object: contains(.object)
        case .array: contains(.array)
        case .string: contains(.string)
        case .number(let literal):
            contains(.number) || (contains(.integer) && Self.isInteger(literal))
        }
    }

    /// Whether a number literal has no fractional part: at once for a literal without a fraction or
    /// an exponent (the usual integer), exactly otherwise (`1.0`, `1e3`).
    static func isInteger(_ literal: String) -> Bool {
        if !literal.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) { return true }
        return ExactNumber(literal: literal)?.isInteger == true
    }

    /// "a string or null", for messages.
    var description: String {
        let words: [String] = Self.names.compactMap { name, type in
            guard contains(type) else { return nil }
            return switch name {
            case "null": "null"
            case "integer": "an integer"
            case "array", "object": "an \(name)"
            default: "a \(name)"
            }
        }
        guard words.count > 1 else { return words.first ?? "nothing" }
        return words.dropLast().joined(separator: ", ") + " or " + words.last!
    }
}

/// Numeric bounds of one subschema, exact.
struct NumericBounds: Sendable {
    var multipleOf: ExactNumber?
    var minimum: ExactNumber?
    var maximum: ExactNumber?
    var exclusiveMinimum: ExactNumber?
    var exclusiveMaximum: ExactNumber?

    var isEmpty: Bool {
        multipleOf == nil && minimum == nil && maximum == nil && exclusiveMinimum == nil && exclusiveMaximum == nil
    }
}

/// `$dynamicRef`: the static target, and the anchor name to look for along the dynamic scope when
/// the static target itself carries that `$dynamicAnchor` (draft 2020-12, section 8.2.3.2).
struct DynamicReference: Sendable {
    var target: Int
    var anchor: String?
}

/// One compiled subschema. Built by `SchemaCompiler` and never changed after, which is why the
/// class may be shared between threads; children are indices into `CompiledSchemas.nodes`, so
/// recursive schemas are cycles of integers, not of references.
final class SchemaNode: @unchecked Sendable {
    enum Form: Sendable { case always, never, keywords }

    var form = Form.keywords
    /// The schema resource this node belongs to (its nearest `$id`, or its document), for the
    /// dynamic scope.
    var resource: Int
    /// Where the node is, `resource-uri#/json/pointer`, for problems found while compiling.
    var location: String

    var ref: Int?
    var dynamicRef: DynamicReference?
    var dynamicAnchor: String?
    var types: TypeSet?
    var enumValues: [JSONValue]?
    var constValue: JSONValue?
    var numeric = NumericBounds()
    var minLength: Int?
    var maxLength: Int?
    var pattern: SchemaPattern?
    var format: String?
    var assertsFormat = false
    var minItems: Int?
    var maxItems: Int?
    var uniqueItems = false
    var minContains: Int?
    var maxContains: Int?
    var minProperties: Int?
    var maxProperties: Int?
    var required: [String] = []
    var dependentRequired: [(key: String, names: [String])] = []

    var allOf: [Int] = []
    var anyOf: [Int] = []
    var oneOf: [Int] = []
    var not: Int?
    var ifSchema: Int?
    var thenSchema: Int?
    var elseSchema: Int?
    var dependentSchemas: [(key: String, node: Int)] = []
    var prefixItems: [Int] = []
    var items: Int?
    var contains: Int?
    var properties: [String: Int] = [:]
    var patternProperties: [(pattern: SchemaPattern, node: Int)] = []
    var additionalProperties: Int?
    var propertyNames: Int?
    var unevaluatedItems: Int?
    var unevaluatedProperties: Int?

    init(resource: Int, location: String) {
        self.resource = resource
        self.location = location
    }

    /// Whether evaluating this node needs to know what its in-place applicators evaluated.
    var needsAnnotations: Bool { unevaluatedItems != nil || unevaluatedProperties != nil }
}
