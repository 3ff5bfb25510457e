/// URI references as `$id`, `$ref` and `$schema` use them: RFC 3986 section 5's resolution of a
/// reference against a base, and the split at the fragment. Nothing is fetched: a URI only names a
/// schema that was given to the compiler.
struct SchemaURI: Hashable, Sendable {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    /// RFC 3986 appendix B's split, which accepts every string.
    init(_ text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        if let colon = rest.firstIndex(of: ":"), Self.isScheme(rest[..<colon]) {
            scheme = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        if rest.hasPrefix("//") {
            let afterSlashes = rest.dropFirst(2)
            let end = afterSlashes.firstIndex(of: "/") ?? afterSlashes.endIndex
            authority = String(afterSlashes[..<end])
            rest = afterSlashes[end...]
        }
        path = String(rest)
    }

    private static func isScheme(_ s: Substring) -> Bool {
        guard let first = s.first, first.isASCII, first.isLetter else { return false }
        return s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    var text: String {
        var out = ""
        if let scheme { out += scheme + ":" }
        if let authority { out += "//" + authority }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// The URI without its fragment: the name of a schema resource.
    var withoutFragment: String {
        var copy = self
        copy.fragment = nil
        return copy.text
    }

    /// `reference` resolved against `self` (RFC 3986, 5.2.2).
    func resolving(_ reference: String) -> SchemaURI {
        let r = SchemaURI(reference)
        var t = SchemaURI("")
        if r.scheme != nil {
            t = r
            t.path = Self.removingDotSegments(r.path)
            return t
        }
        t.scheme = scheme
        t.fragment = r.fragment
        if r.authority != nil {
            t.authority = r.authority
            t.path = Self.removingDotSegments(r.path)
            t.query = r.query
            return t
        }
        t.authority = authority
        if r.path.isEmpty {
            t.path = path
            t.query = r.query ?? query
        } else {
            t.path = Self.removingDotSegments(r.path.hasPrefix("/") ? r.path : merged(r.path))
            t.query = r.query
        }
        return t
    }

    private func merged(_ relative: String) -> String {
        if authority != nil && path.isEmpty { return "/" + relative }
        guard let slash = path.lastIndex(of: "/") else { return relative }
        return String(path[...slash]) + relative
    }

    static func removingDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (i, segment) in segments.enumerated() {
            let last = i == segments.count - 1
            switch segment {
            case ".": if last { output.append("") }
            case "..":
                if output.count > 1 || (output.count == 1 && !output[0].isEmpty) { output.removeLast() }
                if last { output.append("") }
            default: output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return path.hasPrefix("/") && !joined.hasPrefix("/") ? "/" + joined : joined
    }

    /// A fragment's JSON-pointer tokens, percent-decoded then unescaped (`~1` is `/`, `~0` is `~`).
    static func pointerTokens(_ fragment: String) -> [String]? {
        guard let decoded = percentDecoded(fragment) else { return nil }
        guard !decoded.isEmpty else { return [] }
        guard decoded.hasPrefix("/") else { return nil }
        return pathTokens(decoded)
    }

    /// The tokens of a JSON pointer that is not in a URI (no percent-decoding).
    static func pathTokens(_ pointer: String) -> [String] {
        guard !pointer.isEmpty else { return [] }
        return pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences("~1", with: "/").replacingOccurrences("~0", with: "~")
        }
    }

    static func percentDecoded(_ s: String) -> String? {
        guard s.contains("%") else { return s }
        var bytes: [UInt8] = []
        var utf8 = Array(s.utf8)[...]
        while let b = utf8.popFirst() {
            guard b == UInt8(ascii: "%") else { bytes.append(b); continue }
            guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
            utf8 = utf8.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension Substring {
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        String(self).replacingOccurrences(target, with: replacement)
    }
}

extension String {
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        guard contains(target) else { return self }
        return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }

    /// A JSON pointer token for this key (RFC 6901: `~` as `~0`, `/` as `~1`).
    var pointerEscaped: String {
        replacingOccurrences("~", with: "~0").replacingOccurrences("/", with: "~1")
    }
}
