/// A `pattern` or `patternProperties` regular expression, compiled once.
///
/// Swift's `Regex` parses the ECMA-262 syntax schemas use; the options below close the differences
/// that matter in practice: `\d` and `\w` are ASCII as in ECMA-262 (Swift's are Unicode), and
/// matching is by Unicode scalar (Swift's default is by grapheme cluster, so `^.$` would accept an
/// emoji with its modifier). What stays different is listed in docs/SCHEMAS.md.
final class SchemaPattern: @unchecked Sendable {
    // `Regex` is a value with a lazily compiled program behind a lock-free cache; it is only read
    // after init, which is why sharing this wrapper is safe although `Regex` does not say Sendable.
    private enum Compiled {
        /// A pattern without captures, matched without building a capture list (a third faster).
        case plain(Regex<Substring>)
        case capturing(Regex<AnyRegexOutput>)
    }

    private let regex: Compiled
    let source: String

    /// Patterns longer than this are refused: a schema is a document a server can send, and the
    /// compile time of a regular expression grows with its length.
    static let maxLength = 4096

    init(_ source: String) throws(SchemaProblem.Reason) {
        guard source.utf8.count <= Self.maxLength else {
            throw .badValue("a pattern of \(source.utf8.count) bytes (at most \(Self.maxLength))")
        }
        if let risk = PatternRisk.problem(source) { throw .badValue("the pattern \(Quote.text(source)): \(risk)") }
        do {
            if let plain = try? Regex(source, as: Substring.self) {
                regex = .plain(plain.asciiOnlyDigits().asciiOnlyWordCharacters().matchingSemantics(.unicodeScalar))
            } else {
                regex = .capturing(try Regex(source).asciiOnlyDigits().asciiOnlyWordCharacters().matchingSemantics(.unicodeScalar))
            }
        } catch {
            throw .badValue("the pattern \(Quote.text(source)) is not a regular expression: \(error)")
        }
        self.source = source
    }

    /// Whether the pattern matches anywhere in `text` (patterns are not anchored).
    func matches(_ text: String) -> Bool {
        switch regex {
        case .plain(let r): (try? r.firstMatch(in: text)) != nil
        case .capturing(let r): (try? r.firstMatch(in: text)) != nil
        }
    }
}
