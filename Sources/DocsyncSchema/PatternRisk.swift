/// The shapes of regular expression whose backtracking takes exponential time on a near-match:
/// a repeated group whose own end repeats, `(a+)+`, `(\w+\s?)*`, `(x|y*)+`. Swift's `Regex`
/// backtracks without a bound, and a schema is a document any writer can send, so such a pattern
/// is refused with the reason instead of hanging the agent on a string of thirty characters.
/// A heuristic: it catches the usual forms, not every pattern that backtracks badly
/// (docs/SCHEMAS.md, known limits).
enum PatternRisk {
    /// Why `pattern` is refused, or nil.
    static func problem(_ pattern: String) -> String? {
        var stack: [Group] = [Group()]
        var scalars = Array(pattern.unicodeScalars)[...]
        while let c = scalars.popFirst() {
            switch c {
            case "\\":
                _ = scalars.popFirst()
                stack[stack.count - 1].atom(quantified: false)
            case "[":
                skipClass(&scalars)
                stack[stack.count - 1].atom(quantified: false)
            case "(":
                stack.append(Group())
            case ")":
                guard stack.count > 1 else { continue }
                let group = stack.removeLast()
                let repeated = repeats(&scalars)
                if repeated && group.endsRepeated {
                    return "the pattern repeats a group whose end repeats too, which can take exponential time to match; rewrite it without the nested repetition"
                }
                stack[stack.count - 1].atom(quantified: repeated, containsRepetition: group.endsRepeated)
                continue
            case "|":
                stack[stack.count - 1].alternative()
            case "*", "+", "?", "{":
                if c == "{" { skipBraces(&scalars) }
                stack[stack.count - 1].quantifyLast()
            default:
                stack[stack.count - 1].atom(quantified: false)
            }
        }
        return nil
    }

    /// One group being read: whether each alternative so far ends with a repeated atom.
    private struct Group {
        var lastRepeated = false
        var anyAlternativeEndsRepeated = false

        mutating func atom(quantified: Bool, containsRepetition: Bool = false) { lastRepeated = quantified || containsRepetition }
        mutating func quantifyLast() { lastRepeated = true }
        mutating func alternative() {
            anyAlternativeEndsRepeated = anyAlternativeEndsRepeated || lastRepeated
            lastRepeated = false
        }
        var endsRepeated: Bool { anyAlternativeEndsRepeated || lastRepeated }
    }

    /// Consumes a quantifier after a group, if one follows; whether it repeats (`*`, `+`, `{n,}`, `{n,m}` with m > 1).
    private static func repeats(_ s: inout ArraySlice<Unicode.Scalar>) -> Bool {
        guard let c = s.first else { return false }
        switch c {
        case "*", "+":
            s.removeFirst()
            if s.first == "?" || s.first == "+" { s.removeFirst() }
            return true
        case "?":
            s.removeFirst()
            return false
        case "{":
            s.removeFirst()
            var body = ""
            while let d = s.popFirst(), d != "}" { body.unicodeScalars.append(d) }
            let parts = body.split(separator: ",", omittingEmptySubsequences: false)
            return parts.count == 2 && (parts[1].isEmpty || (Int(parts[1]) ?? 0) > 1) || (parts.count == 1 && (Int(parts[0]) ?? 0) > 1)
        default:
            return false
        }
    }

    private static func skipClass(_ s: inout ArraySlice<Unicode.Scalar>) {
        if s.first == "^" { s.removeFirst() }
        if s.first == "]" { s.removeFirst() }
        while let c = s.popFirst() {
            if c == "\\" { _ = s.popFirst() } else if c == "]" { return }
        }
    }

    private static func skipBraces(_ s: inout ArraySlice<Unicode.Scalar>) {
        while let c = s.popFirst(), c != "}" {}
    }
}
