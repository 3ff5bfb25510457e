/// Why one file cannot be a document. Each case names the reason in words a user can act on.
public enum DocumentProblem: Error, Sendable, Hashable, CustomStringConvertible {
    case syntax(JSONSyntaxError)
    case notAnObject(kind: String)
    case badID(String)
    case badDocType(String)
    case noDocType
    case tooLarge(size: Int, limit: Int)
    case tooManyValues(limit: Int)
    case binary
    case unreadable(String)
    case nameNotUTF8
    case duplicateID(String, otherPath: String)

    public var description: String {
        switch self {
        case .syntax(let e): "invalid JSON at \(e)"
        case .notAnObject(let kind): "the top-level value is \(kind), not an object"
        case .badID(let why): "invalid id: \(why)"
        case .badDocType(let why): "invalid docType: \(why)"
        case .noDocType: "no docType: add a \"docType\" field or move the file into a folder named after its type"
        case .tooLarge(let size, let limit): "file is \(size) bytes, over the \(limit)-byte limit (--max-file-size)"
        case .tooManyValues(let limit): "it holds more than \(limit) values (objects, arrays, strings, numbers), the most a document may have"
        case .binary: "not a text file (contains NUL bytes or invalid UTF-8)"
        case .unreadable(let why): "cannot read the file: \(why)"
        case .nameNotUTF8: "the file name is not valid UTF-8"
        case .duplicateID(let id, let other): "id \(id) is also used by \(other)"
        }
    }
}

/// The rules that turn a `*.json` file into a document; see docs/SYNC.md, "Document rules".
public enum DocumentRules {
    /// Fields the sync layer owns on the wire. A user's file never needs them; what it holds under
    /// these names is replaced by the agent's stamps when the document is sent.
    public static let updatedAtKey = "updated_at"
    public static let deletedAtKey = "deleted_at"
    public static let revKey = "rev"

    /// The revision a server gave `document` (its `rev` member as a whole number), if any.
    public static func revision(of document: JSONObject) -> Int64? {
        if case .number(let text)? = document[revKey] { Int64(text) } else { nil }
    }
    /// Who made the change: the name of the token that wrote it, set by the server (a client's
    /// value is replaced); agents pass it on as the author of the change (see docs/GIT.md).
    public static let updatedByKey = "updated_by"
    public static let reservedKeys: Set<String> = [updatedAtKey, deletedAtKey, revKey, updatedByKey]

    /// The longest property name that carries a file: it becomes part of the file's name beside
    /// the document (`<id>.<property>.<ext>`, within NAME_MAX with a 128-byte id) and of index keys.
    public static let maxFilePropertyBytes = 100

    /// Why `property` cannot carry a file (an upload or a download), or `nil` when it can: a NUL or
    /// another control character (cut or forged where the name is stored or logged), or a name too
    /// long to be part of a file name.
    public static func fileProperty(problemWith property: String) -> String? {
        if property.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "its name holds a control character" }
        if property.utf8.count > maxFilePropertyBytes { return "its name is longer than \(maxFilePropertyBytes) bytes" }
        return nil
    }

    /// Whether `key` is one of ``reservedKeys`` (compared, not hashed: asked of every member).
    public static func isReserved(_ key: String) -> Bool { key == updatedAtKey || key == deletedAtKey || key == revKey || key == updatedByKey }

    /// The wire text of a stored body (compact JSON without stamps) with its stamps appended:
    /// `updated_at`, and `deleted_at` for a tombstone. Spliced as text, the same bytes as setting
    /// the members on the object and writing it out again.
    public static func stampedWireText(body: String, updatedAt: Int64?, deletedAt: Int64?) -> String {
        var body = body
        return body.withUTF8 { stampedWireText(utf8: $0, updatedAt: updatedAt, deletedAt: deletedAt) }
    }

    /// As above, from the body's UTF-8 bytes (as the index hands them out): written once, into a
    /// string of the right size.
    public static func stampedWireText(utf8 body: UnsafeBufferPointer<UInt8>, updatedAt: Int64?, deletedAt: Int64?) -> String {
        guard body.last == UInt8(ascii: "}") else { return String(decoding: body, as: UTF8.self) }
        var stamps: [UInt8] = []
        var length = body.count - 1  // without the closing brace
        for (key, value) in [(updatedAtKey, updatedAt), (deletedAtKey, deletedAt)] {
            guard let value else { continue }
            if length + stamps.count > 1 { stamps.append(UInt8(ascii: ",")) }
            stamps.append(contentsOf: "\"\(key)\":\"\(Timestamp(unixMilliseconds: value).rfc3339)\"".utf8)
        }
        stamps.append(UInt8(ascii: "}"))
        length += stamps.count
        return String(unsafeUninitializedCapacity: length) { out in
            let head = body.count - 1
            _ = out.initialize(from: body[..<head])
            _ = out[head...].initialize(from: stamps)
            return length
        }
    }

    /// Default per-file size limit: 16 MiB.
    public static let defaultMaxFileSize = ProtocolLimits.maxDocumentBytes

    /// `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`: safe as a file name, a URL path segment and an SQL value.
    public static func isSafeIdentifier(_ s: String) -> Bool {
        let utf8 = s.utf8
        guard let first = utf8.first, utf8.count <= 128, isAlnum(first) else { return false }
        return utf8.allSatisfy { isAlnum($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func isAlnum(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
    }

    /// A docType must be usable as a folder name and a URL segment: non-empty, at most 128 bytes,
    /// no `/`, no control characters, not `.` or `..`.
    public static func docTypeProblem(_ s: String) -> String? {
        if s.isEmpty { return "it is empty" }
        if s.utf8.count > 128 { return "it is longer than 128 bytes" }
        if s == "." || s == ".." { return "\"\(s)\" is not a usable name" }
        if s.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") }) {
            return "it contains '/', '\\' or a control character"
        }
        return nil
    }

    /// The docType of a document at `relativePath` (slash-separated, relative to the synced root):
    /// its `docType` field if present, else the first folder under the root.
    public static func docType(of object: JSONObject, relativePath: String) throws(DocumentProblem) -> String {
        if let field = object["docType"] {
            guard case .string(let s) = field else { throw .badDocType("\"docType\" is \(field.kindName), not a string") }
            if let why = docTypeProblem(s) { throw .badDocType(why) }
            return s
        }
        let components = relativePath.split(separator: "/", omittingEmptySubsequences: true)
        guard components.count > 1 else { throw .noDocType }
        let folder = String(components[0])
        if let why = docTypeProblem(folder) { throw .badDocType("folder name \"\(folder)\": \(why)") }
        return folder
    }

    /// The id the file declares: `nil` if it has none (one will be assigned), else a valid id.
    public static func declaredID(of object: JSONObject) throws(DocumentProblem) -> String? {
        guard let field = object["id"] else { return nil }
        guard case .string(let s) = field else { throw .badID("\"id\" is \(field.kindName), not a string") }
        guard isSafeIdentifier(s) else {
            throw .badID("\"\(s.prefix(40))\" is not a safe identifier (letters, digits, '_' and '-', starting with a letter or digit, at most 128)")
        }
        return s
    }

    /// Parses a file's bytes into its top-level object, refusing binary files and non-objects.
    public static func parseObject(_ bytes: [UInt8], maxSize: Int = defaultMaxFileSize) throws(DocumentProblem) -> JSONObject {
        if bytes.count > maxSize { throw .tooLarge(size: bytes.count, limit: maxSize) }
        let value: JSONValue
        do {
            // A text that parses holds no NUL and is valid UTF-8 (the parser validates every
            // string, and everything outside strings is ASCII): only a failure needs telling apart.
            value = try JSONParser.parse(bytes, maxDepth: ProtocolLimits.maxDocumentDepth, maxValues: ProtocolLimits.maxDocumentValues)
        } catch where error.overBudget {
            throw .tooManyValues(limit: ProtocolLimits.maxDocumentValues)
        } catch {
            if bytes.contains(0) || String(validating: bytes, as: UTF8.self) == nil { throw .binary }
            throw .syntax(error)
        }
        guard case .object(let object) = value else { throw .notAnObject(kind: value.kindName) }
        return object
    }

    /// Returns `text` with `"id": "<id>"` inserted as the first member of its top-level object,
    /// leaving every other byte as it was: the layout the user chose is kept.
    ///
    /// The member copies the whitespace that precedes the existing first key (so an indented file
    /// stays indented) and the spacing after its colon. Precondition: `text` parses as an object.
    public static func insertingID(_ id: String, into text: [UInt8]) -> [UInt8] {
        var i = text.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while i < text.count, isSpace(text[i]) { i += 1 }
        precondition(i < text.count && text[i] == UInt8(ascii: "{"), "not an object")
        let brace = i
        i += 1
        var firstKey = i
        while firstKey < text.count, isSpace(text[firstKey]) { firstKey += 1 }
        var idMember: [UInt8] = []
        JSONWriter.writeString("id", into: &idMember)
        if text[firstKey] == UInt8(ascii: "}") {
            // An empty object: `{}` or `{ }` becomes `{"id": "…"}`.
            var out = Array(text[0...brace])
            out += idMember + Array(": ".utf8)
            JSONWriter.writeString(id, into: &out)
            out += text[firstKey...]
            return out
        }
        // Is the first member written `"key": value` or `"key":value`?
        var j = firstKey + 1
        while j < text.count, text[j] != UInt8(ascii: "\"") {
            j += text[j] == UInt8(ascii: "\\") ? 2 : 1
        }
        var colon = j + 1
        while colon < text.count, isSpace(text[colon]) { colon += 1 }
        let spaced = colon + 1 < text.count && text[colon + 1] == UInt8(ascii: " ")
        var member = idMember + Array((spaced ? ": " : ":").utf8)
        JSONWriter.writeString(id, into: &member)
        member.append(UInt8(ascii: ","))
        member += text[brace + 1..<firstKey]  // the same line break and indent as the next key
        return Array(text[..<firstKey]) + member + Array(text[firstKey...])
    }

    /// Returns `text` with its id set to `id`: the existing `"id"` value replaced in place, or a
    /// new first member inserted when there is none.
    public static func settingID(_ id: String, in text: [UInt8]) -> [UInt8] {
        guard let spans = try? JSONParser.topLevelMemberSpans(text), let span = spans.first(where: { $0.key == "id" }) else {
            return insertingID(id, into: text)
        }
        var value: [UInt8] = []
        JSONWriter.writeString(id, into: &value)
        return Array(text[..<span.value.lowerBound]) + value + Array(text[span.value.upperBound...])
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    /// Whether a file or folder name takes part in sync at all. Hidden names (editors' swap and lock
    /// files, `.docsync/`, `.git/`), backup files (`~`), and conflict copies are left alone.
    /// Names are compared as the bytes the kernel gives (every name in the tree passes here).
    public static func isIgnoredName(_ name: String) -> Bool { isIgnored(name.utf8) }

    /// The same for one component of a path, as `split` gives it (no string made for it).
    public static func isIgnoredName(_ name: Substring) -> Bool { isIgnored(name.utf8) }

    private static func isIgnored<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bool {
        guard let first = bytes.first else { return false }
        return first == UInt8(ascii: ".") || first == UInt8(ascii: "#") || bytes.last == UInt8(ascii: "~")
            || contains(bytes, conflictMarker)
    }

    /// Whether the file at `relative` (a path inside the folder) is a document by its name.
    public static func isDocumentPath(_ relative: String) -> Bool {
        guard let slash = relative.lastIndex(of: "/") else { return isDocumentName(relative) }
        return isDocumentName(String(relative[relative.index(after: slash)...]))
    }

    /// Whether a (non-ignored) file name is a document: `*.json`, with something before the dot.
    public static func isDocumentName(_ name: String) -> Bool {
        let bytes = name.utf8
        return bytes.count > jsonSuffix.count && bytes.suffix(jsonSuffix.count).elementsEqual(jsonSuffix) && !isIgnoredName(name)
    }

    private static let jsonSuffix = Array(".json".utf8)
    private static let conflictMarker = Array(".sync-conflict-".utf8)

    private static func contains<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes, _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count else { return false }
        var start = bytes.startIndex
        while let i = bytes[start...].firstIndex(of: needle[0]) {
            if bytes[i...].starts(with: needle) { return true }
            start = bytes.index(after: i)
        }
        return false
    }
}
