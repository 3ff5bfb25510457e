/// `.docsyncignore` at the root, in gitignore syntax, on top of the built-in ignores.
///
/// Supported: blank lines and `#` comments, `!` negation (last match wins), a leading `/` or an
/// inner `/` anchoring the pattern to the root, a trailing `/` matching folders only, `*` and `?`
/// within one path component, `**` across components, and `\` escapes.
public struct IgnoreRules: Sendable, Hashable {
    struct Rule: Sendable, Hashable {
        var pattern: [String]  // components; "**" spans any number
        var negated: Bool
        var directoryOnly: Bool
        var anchored: Bool
    }

    var rules: [Rule] = []

    public init() {}

    public init(text: String) {
        for raw in text.split(whereSeparator: \.isNewline) {
            var line = String(raw)
            while line.hasSuffix(" ") && !line.hasSuffix("\\ ") { line.removeLast() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            var negated = false
            if line.hasPrefix("!") {
                negated = true
                line.removeFirst()
            } else if line.hasPrefix("\\!") || line.hasPrefix("\\#") {
                line.removeFirst()
            }
            var directoryOnly = false
            if line.hasSuffix("/") {
                directoryOnly = true
                line.removeLast()
            }
            var anchored = line.dropLast().contains("/")
            if line.hasPrefix("/") {
                anchored = true
                line.removeFirst()
            }
            guard !line.isEmpty else { continue }
            var components = line.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            if !anchored { components.insert("**", at: 0) }
            rules.append(Rule(pattern: components, negated: negated, directoryOnly: directoryOnly, anchored: anchored))
        }
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// Whether `path` (relative, `/`-separated) is ignored, itself or through an ignored folder.
    public func isIgnored(_ path: String, isDirectory: Bool) -> Bool {
        let components = path.split(separator: "/").map(String.init)
        for depth in 1..<max(components.count, 1) where matches(Array(components[0..<depth]), isDirectory: true) {
            return true
        }
        return matches(components, isDirectory: isDirectory)
    }

    private func matches(_ components: [String], isDirectory: Bool) -> Bool {
        var ignored = false
        for rule in rules where !(rule.directoryOnly && !isDirectory) {
            if Self.match(rule.pattern[...], components[...]) { ignored = !rule.negated }
        }
        return ignored
    }

    /// Whether `path` matches `pattern`, `**` spanning any number of components.
    static func match(_ pattern: ArraySlice<String>, _ path: ArraySlice<String>) -> Bool {
        wildcardMatch(Array(pattern), Array(path), isStar: { $0 == "**" }, matches: glob)
    }

    private enum Token: Equatable {
        case literal(Unicode.Scalar), any, star
    }

    /// `*` and `?` (`[...]`-free) globbing within one component, with `\\` escapes.
    static func glob(_ pattern: String, _ text: String) -> Bool {
        var p: [Token] = []
        var escaped = false
        for c in pattern.unicodeScalars {
            if escaped {
                p.append(.literal(c))
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                p.append(c == "*" ? .star : c == "?" ? .any : .literal(c))
            }
        }
        if escaped { p.append(.literal("\\")) }
        return wildcardMatch(p, Array(text.unicodeScalars), isStar: { $0 == .star }) { token, c in token == .any || token == .literal(c) }
    }

    /// Whether `subject` matches `pattern`, where a star element matches any run of subject
    /// elements and every other element matches exactly one (`matches`). Greedy with a single
    /// backtracking point, the last star: linear in practice, never exponential (the recursive
    /// form took minutes on a `.docsyncignore` line of twenty `*`, found by fuzzing). Used for
    /// characters within a component (`*`) and for components within a path (`**`).
    static func wildcardMatch<P, S>(_ pattern: [P], _ subject: [S], isStar: (P) -> Bool, matches: (P, S) -> Bool) -> Bool {
        var (pi, si) = (0, 0)
        var star: (p: Int, s: Int)?
        while si < subject.count {
            if pi < pattern.count && isStar(pattern[pi]) {
                star = (pi, si)
                pi += 1
            } else if pi < pattern.count && matches(pattern[pi], subject[si]) {
                pi += 1
                si += 1
            } else if let back = star {
                star = (back.p, back.s + 1)
                (pi, si) = (back.p + 1, back.s + 1)
            } else {
                return false
            }
        }
        while pi < pattern.count && isStar(pattern[pi]) { pi += 1 }
        return pi == pattern.count
    }
}
