import DocsyncModel

/// Why a schema could not be compiled: where in it, and what is wrong.
public struct SchemaProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Error, Sendable, Hashable {
        /// A keyword's value is not what the draft allows.
        case badValue(String)
        /// A `$ref`, `$dynamicRef` or `$schema` names nothing that was given.
        case unresolvable(String)
        /// Past a bound that keeps compiling and checking finite.
        case tooLarge(String)
    }

    /// The schema's URI and the JSON pointer of the subschema (`docsync:schema/invoice#/properties/total`).
    public var location: String
    public var reason: Reason
    /// Which of the documents given to `CompiledSchemas.compile` it is in, when known.
    public var document: Int?

    public init(location: String, reason: Reason, document: Int? = nil) {
        self.location = location
        self.reason = reason
        self.document = document
    }

    public var description: String {
        let what = switch reason {
        case .badValue(let why): why
        case .unresolvable(let ref): "\(ref) names no schema docsync has (schemas are never fetched)"
        case .tooLarge(let why): why
        }
        return "\(location): \(what)"
    }
}

/// One way a document fails its schema: where in the document (a JSON pointer, `""` for the whole
/// document), the keyword that failed, and a message a person understands.
public struct SchemaViolation: Sendable, Hashable, Codable, CustomStringConvertible {
    public var instance: String
    public var keyword: String
    public var message: String

    /// The keyword of the violation a check ends with when it ran out of ``CheckBudget``.
    public static let overBudgetKeyword = "budget"

    public init(instance: String, keyword: String, message: String) {
        self.instance = instance
        self.keyword = keyword
        self.message = message
    }

    /// `/total: expected a number, got the string "12.50"`.
    public var description: String { "\(instance.isEmpty ? "/" : instance): \(message)" }

    /// `{"instance", "keyword", "message"}`.
    public var json: JSONValue {
        .object(JSONObject([(key: "instance", value: .string(instance)), (key: "keyword", value: .string(keyword)), (key: "message", value: .string(message))]))
    }

    /// The violations as a JSON array's text, as the index keeps them.
    public static func text(_ violations: [SchemaViolation]) -> String {
        JSONWriter.string(.array(violations.map(\.json)))
    }

    /// Violations read back from ``text(_:)`` (nothing from text that is not such an array).
    public static func parse(_ text: String) -> [SchemaViolation] {
        guard case .array(let elements)? = try? JSONParser.parse(text) else { return [] }
        return elements.compactMap { element in
            guard let o = element.object, let instance = o["instance"]?.string, let keyword = o["keyword"]?.string,
                  let message = o["message"]?.string else { return nil }
            return SchemaViolation(instance: instance, keyword: keyword, message: message)
        }
    }
}

/// Values as messages show them: short, quoted, never a whole document.
enum Quote {
    static func text(_ s: String, limit: Int = 60) -> String {
        let clipped = s.unicodeScalars.count > limit ? String(String.UnicodeScalarView(s.unicodeScalars.prefix(limit))) + "…" : s
        return String(decoding: JSONWriter.bytes(.string(clipped)), as: UTF8.self)
    }

    /// `the string "12.50"`, `the number 7`, `an object`.
    static func value(_ v: JSONValue) -> String {
        switch v {
        case .string(let s): "the string \(text(s))"
        case .number(let n): "the number \(n.count > 40 ? String(n.prefix(40)) + "…" : n)"
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        case .array(let a): "an array of \(a.count)"
        case .object: "an object"
        }
    }

    /// A value as JSON, clipped: for `const` and `enum` messages.
    static func json(_ v: JSONValue, limit: Int = 60) -> String {
        let written = JSONWriter.string(v)
        return written.count > limit ? String(written.prefix(limit)) + "…" : written
    }
}
