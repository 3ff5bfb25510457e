/// Whether two JSON values hold the same content when a server may have rewritten them: keys in
/// any order, numbers equal by value (`1.50` and `1.5`, `1e2` and `100`). Servers that store
/// parsed JSON (Kinto, PostgreSQL's jsonb) give back the same content in another text.
extension JSONValue {
    public func sameContent(as other: JSONValue) -> Bool {
        switch (self, other) {
        case (.object(let a), .object(let b)): a.sameContent(as: b)
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.sameContent(as: $1) }
        case (.number(let a), .number(let b)): a == b || DecimalText(a) == DecimalText(b) && DecimalText(a) != nil
        default: self == other
        }
    }
}

extension JSONObject {
    public func sameContent(as other: JSONObject) -> Bool {
        guard members.count == other.members.count else { return false }
        let others = other.keyed
        for (key, value) in members {
            guard let theirs = others[key], value.sameContent(as: theirs) else { return false }
        }
        return true
    }
}

/// A JSON number literal as sign, significant digits and exponent: equal exactly when the values
/// are (no rounding through `Double`).
struct DecimalText: Equatable {
    var negative: Bool
    var digits: Substring
    var exponent: Int

    init?(_ text: String) {
        var s = Substring(text)
        negative = s.hasPrefix("-")
        if negative { s = s.dropFirst() }
        var exponent = 0
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            // Exponents beyond this range are not worth comparing exactly (and must not trap).
            guard let value = Int(s[s.index(after: e)...]), abs(value) < 1_000_000 else { return nil }
            exponent = value
            s = s[..<e]
        }
        var integer = s, fraction: Substring = ""
        if let dot = s.firstIndex(of: ".") {
            integer = s[..<dot]
            fraction = s[s.index(after: dot)...]
        }
        guard !integer.isEmpty, (integer + fraction).allSatisfy(\.isASCII), (integer + fraction).allSatisfy(\.isNumber) else { return nil }
        var all = Substring(integer + fraction)
        exponent -= fraction.count
        while all.first == "0" { all = all.dropFirst() }
        while all.last == "0" {
            all = all.dropLast()
            exponent += 1
        }
        if all.isEmpty {
            (self.negative, self.digits, self.exponent) = (false, "0", 0)
            return
        }
        (self.digits, self.exponent) = (all, exponent)
    }
}
