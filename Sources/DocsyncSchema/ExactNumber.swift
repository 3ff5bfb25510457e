import DocsyncModel

/// A JSON number read exactly from its literal: `±digits × 10^exponent`, the digits without leading
/// or trailing zeros (zero has none). `1`, `1.0` and `10e-1` are the same value; `12345678901234567890`
/// stays exact. Schemas compare, bound and divide these, never a `Double`.
struct ExactNumber: Hashable, Sendable {
    let negative: Bool
    let digits: [UInt8]
    let exponent: Int

    /// An exponent this far from zero is already beyond any value a comparison can tell apart.
    private static let exponentLimit = 1_000_000_000

    init?(literal: String) {
        var digits: [UInt8] = []
        var negative = false
        var exponent = 0
        var fractionDigits = 0
        var inFraction = false
        var utf8 = literal.utf8.makeIterator()
        var byte = utf8.next()
        if byte == UInt8(ascii: "-") { negative = true; byte = utf8.next() }
        while let b = byte, b != UInt8(ascii: "e"), b != UInt8(ascii: "E") {
            if b == UInt8(ascii: ".") { inFraction = true } else {
                guard b >= 0x30, b <= 0x39 else { return nil }
                if !(digits.isEmpty && b == 0x30) { digits.append(b - 0x30) }
                if inFraction { fractionDigits += 1 }
            }
            byte = utf8.next()
        }
        if byte != nil {
            var text = ""
            while let b = utf8.next() { text.unicodeScalars.append(Unicode.Scalar(b)) }
            exponent = Self.clampedExponent(text)
        }
        exponent -= fractionDigits
        while digits.last == 0 { digits.removeLast(); exponent += 1 }
        self.negative = negative && !digits.isEmpty
        self.digits = digits
        self.exponent = digits.isEmpty ? 0 : exponent
    }

    private static func clampedExponent(_ text: String) -> Int {
        let negative = text.hasPrefix("-")
        let magnitude = text.drop(while: { $0 == "-" || $0 == "+" }).drop(while: { $0 == "0" })
        let value = magnitude.count > 9 ? exponentLimit : Int(magnitude) ?? 0
        return negative ? -value : value
    }

    init?(_ value: JSONValue) {
        guard case .number(let literal) = value else { return nil }
        self.init(literal: literal)
    }

    var isZero: Bool { digits.isEmpty }

    /// Whether the value has no fractional part (`1.0` is an integer, as the draft says).
    var isInteger: Bool { digits.isEmpty || exponent >= 0 }

    /// The value as an `Int` when it is a non-negative integer; larger values are `Int.max`. Used for
    /// counts such as `maxLength`, where anything past memory is "no limit in practice".
    var count: Int? {
        guard !negative, isInteger else { return nil }
        if digits.count + exponent > 18 { return Int.max }
        var value = 0
        for d in digits { value = value * 10 + Int(d) }
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// -1, 0 or 1 as `self` is below, equal to or above `other`.
    func compare(_ other: ExactNumber) -> Int {
        if negative != other.negative { return negative ? -1 : 1 }
        let magnitude = Self.compareMagnitude(self, other)
        return negative ? -magnitude : magnitude
    }

    private static func compareMagnitude(_ a: ExactNumber, _ b: ExactNumber) -> Int {
        if a.isZero || b.isZero { return a.isZero ? (b.isZero ? 0 : -1) : 1 }
        let aLead = a.digits.count + a.exponent, bLead = b.digits.count + b.exponent
        if aLead != bLead { return aLead < bLead ? -1 : 1 }
        for (x, y) in zip(a.digits, b.digits) where x != y { return x < y ? -1 : 1 }
        return a.digits.count == b.digits.count ? 0 : (a.digits.count < b.digits.count ? -1 : 1)
    }

    /// Whether `self / divisor` is an integer, computed exactly; `divisor` is positive (the
    /// meta-schema says so). A divisor of more than 18 significant digits falls back to `Double`.
    func isMultiple(of divisor: ExactNumber) -> Bool {
        if isZero { return true }
        if divisor.isZero { return false }
        let shift = exponent - divisor.exponent
        // Digits carry no trailing zero, so a/(b·10^k) with k > 0 is never an integer.
        if shift < 0 { return false }
        guard divisor.digits.count <= 18 else { return approximatelyMultiple(of: divisor) }
        let modulus = divisor.digits.reduce(UInt64(0)) { $0 * 10 + UInt64($1) }
        let remainder = digits.reduce(UInt64(0)) { ($0 * 10 + UInt64($1)) % modulus }
        return Self.multiplyMod(remainder, Self.powerOfTenMod(shift, modulus), modulus) == 0
    }

    private func approximatelyMultiple(of divisor: ExactNumber) -> Bool {
        guard let x = Double(text), let m = Double(divisor.text), m != 0 else { return false }
        let q = x / m
        return q.isFinite && q == q.rounded()
    }

    private static func multiplyMod(_ a: UInt64, _ b: UInt64, _ m: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return m.dividingFullWidth((product.high, product.low)).remainder
    }

    private static func powerOfTenMod(_ power: Int, _ m: UInt64) -> UInt64 {
        var result: UInt64 = 1 % m, base: UInt64 = 10 % m, e = power
        while e > 0 {
            if e & 1 == 1 { result = multiplyMod(result, base, m) }
            base = multiplyMod(base, base, m)
            e >>= 1
        }
        return result
    }

    /// A canonical literal, for messages and the `Double` fallback.
    var text: String {
        if isZero { return "0" }
        let body = String(decoding: digits.map { $0 + 0x30 }, as: UTF8.self)
        return (negative ? "-" : "") + body + (exponent == 0 ? "" : "e\(exponent)")
    }
}
