import DocsyncModel

/// JSON equality as a schema means it, for `const`, `enum` and `uniqueItems`: numbers by value
/// (`1` equals `1.0`), objects whatever their key order, arrays element by element.
enum SchemaEquality {
    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x), .number(let y)):
            return x == y || ExactNumber(literal: x) == ExactNumber(literal: y)
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            return x.members.allSatisfy { member in
                guard let other = y[member.key] else { return false }
                return equal(member.value, other)
            }
        default: return false
        }
    }

    /// A hash that agrees with `equal`: numbers hash their exact value, object members are combined
    /// in an order-free way.
    static func hash(_ value: JSONValue, into hasher: inout Hasher) {
        switch value {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b ? 1 : 2)
        case .string(let s): hasher.combine(3); hasher.combine(s)
        case .number(let n): hasher.combine(4); hasher.combine(ExactNumber(literal: n))
        case .array(let elements):
            hasher.combine(5)
            hasher.combine(elements.count)
            for element in elements { hash(element, into: &hasher) }
        case .object(let object):
            hasher.combine(6)
            var combined = 0
            for member in object.members {
                var memberHasher = Hasher()
                memberHasher.combine(member.key)
                hash(member.value, into: &memberHasher)
                combined &+= memberHasher.finalize()
            }
            hasher.combine(combined)
        }
    }
}

/// A value in a `Set` or `Dictionary` under schema equality.
struct SchemaKey: Hashable {
    let value: JSONValue
    init(_ value: JSONValue) { self.value = value }
    static func == (lhs: SchemaKey, rhs: SchemaKey) -> Bool { SchemaEquality.equal(lhs.value, rhs.value) }
    func hash(into hasher: inout Hasher) { SchemaEquality.hash(value, into: &hasher) }
}
