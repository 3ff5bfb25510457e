/// A JSON value that keeps what a user wrote: object key order, and numbers as their literal text.
///
/// Foundation's `JSONSerialization` reorders keys and turns `12345678901234567890` or `0.10` into a
/// `Double`; a sync tool that did that would rewrite users' records behind their backs. Numbers are
/// therefore stored as the exact literal (validated against the JSON grammar when parsed), and
/// objects as an ordered list of members.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's literal text, e.g. `"12345678901234567890"` or `"1.50e+3"`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The members of an object value, else `nil`.
    public var object: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The text of a string value, else `nil`.
    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The elements of an array value, else `nil`.
    public var elements: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short name for the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// An ordered JSON object. Lookups are linear: most objects have tens of keys, and keeping one
/// array keeps the order the user wrote them in for free. A loop that looks up every key of
/// another object goes through ``keyed`` instead: a document may hold 2^20 values, so one object
/// may have hundreds of thousands of keys, and such a loop over it would be quadratic.
public struct JSONObject: Sendable, Hashable {
    public private(set) var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = members
    }

    public var keys: [String] { members.map(\.key) }
    public var isEmpty: Bool { members.isEmpty }
    public var count: Int { members.count }

    /// The value for `key`; setting `nil` removes the key, setting a new key appends it, setting an
    /// existing key replaces its value in place (its position is kept).
    public subscript(key: String) -> JSONValue? {
        get { members.first(where: { $0.key == key })?.value }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for member in members {
            hasher.combine(member.key)
            hasher.combine(member.value)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(String(value)) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}

extension JSONObject {
    /// The members found by key in constant time once the object is larger than a few keys (a
    /// dictionary of positions, made once), and read in turn below that, where it is faster.
    public struct Keyed: Sendable {
        public let object: JSONObject
        private let positions: [String: Int]?

        public init(_ object: JSONObject) {
            self.object = object
            positions = object.count > 16
                ? Dictionary(object.members.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first }) : nil
        }

        public subscript(key: String) -> JSONValue? {
            guard let positions else { return object[key] }
            return positions[key].map { object.members[$0].value }
        }
    }

    /// For looking up many keys: see ``Keyed``.
    public var keyed: Keyed { Keyed(self) }
}
