import CPCRE2

/// A `pattern` or `patternProperties` regular expression, compiled once, matched with PCRE2.
///
/// A schema is a document any writer can send, so matching must have a bound that holds whatever
/// the pattern: PCRE2 counts the work of each match and stops at a limit, where a backtracking
/// engine without one (Swift's `Regex`) spends days on `^(a|a)+$` against forty `a`s and a `!`.
/// Each match draws on the check's ``CheckBudget``; a match the budget cannot pay for ends the
/// check with that reason. The ECMA-262 syntax schemas use is what PCRE2 reads, with `\u` escapes,
/// `$` at the very end only, and `\s` widened to ECMA-262's whitespace (``ECMAPattern``); what
/// stays different is listed in docs/SCHEMAS.md.
final class SchemaPattern: @unchecked Sendable {
    // The compiled code is only read after init (PCRE2 documents `pcre2_match` on one code from
    // many threads as safe), which is why sharing this wrapper is safe.
    private let code: OpaquePointer
    let source: String

    /// Patterns longer than this are refused: compile time grows with a pattern's length.
    static let maxLength = 4096
    /// Nested groups past this are refused at compile time (PCRE2's own default is 250).
    static let maxNesting: UInt32 = 64
    /// The most backtracking frames' memory one match may use, in KiB.
    static let heapLimitKiB: UInt32 = 8 << 10

    init(_ source: String) throws(SchemaProblem.Reason) {
        guard source.utf8.count <= Self.maxLength else {
            throw .badValue("a pattern of \(source.utf8.count) bytes (at most \(Self.maxLength))")
        }
        let translated = ECMAPattern.translate(source)
        guard let context = pcre2_compile_context_create_8(nil) else { throw .badValue("no memory to compile a pattern") }
        defer { pcre2_compile_context_free_8(context) }
        pcre2_set_parens_nest_limit_8(context, Self.maxNesting)
        pcre2_set_compile_extra_options_8(context, UInt32(PCRE2_EXTRA_ALT_BSUX))
        let options = UInt32(PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS | PCRE2_NEVER_BACKSLASH_C)
        var error: Int32 = 0
        var offset = 0
        var bytes = Array(translated.utf8)
        let compiled = bytes.withUnsafeMutableBufferPointer { buffer in
            pcre2_compile_8(buffer.baseAddress, buffer.count, options, &error, &offset, context)
        }
        guard let compiled else {
            throw .badValue("the pattern \(Quote.text(source)) is not a regular expression: \(Self.message(error))")
        }
        code = compiled
        self.source = source
    }

    deinit { pcre2_code_free_8(code) }

    /// What one match found: the pattern matched somewhere in the text, it did not, or the
    /// budget could not pay for finding out.
    enum Outcome { case matched, unmatched, overBudget }

    /// Whether the pattern matches anywhere in `text` (patterns are not anchored), paid from
    /// `budget`. A match is first tried with a limit in proportion to the text, which an
    /// ordinary pattern never reaches; one that reaches it is tried again with what the budget
    /// has left (at most ``CheckBudget/perMatch``). The budget is charged the limits used, an
    /// upper bound of the work done, so a check's total work is bounded whatever it matches.
    func match(_ text: String, scratch: MatchScratch, budget: inout CheckBudget) -> Outcome {
        var text = text
        return text.withUTF8 { subject in
            let first = min(budget.remaining, CheckBudget.firstTry(subject.count))
            guard first > 0 else { return .overBudget }
            budget.charge(first)
            switch run(subject, limit: first, scratch: scratch) {
            case .some(true): return .matched
            case .some(false): return .unmatched
            case nil: break
            }
            let second = min(budget.remaining, CheckBudget.perMatch)
            guard second > first else { return .overBudget }
            budget.charge(second)
            switch run(subject, limit: second, scratch: scratch) {
            case .some(true): return .matched
            case .some(false): return .unmatched
            case nil: return .overBudget
            }
        }
    }

    /// One match under `limit`; nil when a limit stopped it.
    private func run(_ subject: UnsafeBufferPointer<UInt8>, limit: Int, scratch: MatchScratch) -> Bool? {
        pcre2_set_match_limit_8(scratch.context, UInt32(clamping: limit))
        // Depth is bounded by the match limit too; the heap limit bounds memory.
        pcre2_set_depth_limit_8(scratch.context, UInt32(clamping: limit))
        pcre2_set_heap_limit_8(scratch.context, Self.heapLimitKiB)
        // Swift strings are valid UTF-8: PCRE2 need not check again. An empty string may come
        // without storage, and PCRE2 10.42 wants a pointer even for no bytes.
        let zero: UInt8 = 0
        let result = withUnsafePointer(to: zero) { fallback in
            pcre2_match_8(code, subject.baseAddress ?? fallback, subject.count, 0, UInt32(PCRE2_NO_UTF_CHECK), scratch.data, scratch.context)
        }
        if result >= 0 { return true }
        if result == PCRE2_ERROR_NOMATCH { return false }
        return nil
    }

    static func message(_ error: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBufferPointer { pcre2_get_error_message_8(error, $0.baseAddress, $0.count) }
        return count > 0 ? String(decoding: buffer.prefix(Int(count)), as: UTF8.self) : "error \(error)"
    }
}

/// What one check needs to match patterns: PCRE2's match data and match context, made once per
/// check rather than once per match.
final class MatchScratch {
    let context: OpaquePointer
    let data: OpaquePointer

    init() {
        // Allocation failures here are out-of-memory, where nothing else could go on either.
        guard let context = pcre2_match_context_create_8(nil), let data = pcre2_match_data_create_8(1, nil) else {
            fatalError("PCRE2 could not allocate its match context")
        }
        self.context = context
        self.data = data
    }

    deinit {
        pcre2_match_data_free_8(data)
        pcre2_match_context_free_8(context)
    }
}
