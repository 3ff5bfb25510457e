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

    static func match(_ pattern: ArraySlice<String>, _ path: ArraySlice<String>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == "**" {
            let rest = pattern.dropFirst()
            var tail = path
            while true {
                if match(rest, tail) { return true }
                guard !tail.isEmpty else { return false }
                tail = tail.dropFirst()
            }
        }
        guard let component = path.first, glob(Array(first.unicodeScalars)[...], Array(component.unicodeScalars)[...]) else { return false }
        return match(pattern.dropFirst(), path.dropFirst())
    }

    /// `*`, `?` and `[...]`-free globbing within one component, with `\` escapes.
    static func glob(_ p: ArraySlice<Unicode.Scalar>, _ s: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let c = p.first else { return s.isEmpty }
        switch c {
        case "*":
            var tail = s
            while true {
                if glob(p.dropFirst(), tail) { return true }
                guard !tail.isEmpty else { return false }
                tail = tail.dropFirst()
            }
        case "?":
            return !s.isEmpty && glob(p.dropFirst(), s.dropFirst())
        case "\\" where p.count > 1:
            return s.first == p[p.startIndex + 1] && glob(p.dropFirst(2), s.dropFirst())
        default:
            return s.first == c && glob(p.dropFirst(), s.dropFirst())
        }
    }
}
