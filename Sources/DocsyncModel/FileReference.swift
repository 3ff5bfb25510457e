import Glibc

/// A top-level property of a document that names a file of the tree: `"scan": {"$file": "scans/42.pdf"}`.
///
/// The path is relative to the document's folder. The reference stays in the local file; the
/// server's copy of the document holds the uploaded file's URL instead (see `AttachmentMapping`).
public struct FileReference: Sendable, Hashable {
    public static let key = "$file"

    /// The property that holds the reference.
    public var property: String
    /// The path as written in the document.
    public var written: String
    /// The path relative to the synced root, `/`-separated and normalised, or why there is none.
    public var resolved: Result<String, FileReferenceProblem>

    /// The references among `object`'s top-level properties, in document order. `documentPath` is
    /// the document's own path relative to the root.
    public static func all(in object: JSONObject, documentPath: String) -> [FileReference] {
        var out: [FileReference] = []
        for (property, value) in object.members {
            guard case .object(let inner) = value, inner[key] != nil else { continue }
            if let why = DocumentRules.fileProperty(problemWith: property) {
                out.append(FileReference(property: property, written: "", resolved: .failure(.propertyName(property, reason: why))))
                continue
            }
            guard inner.members.count == 1, case .string(let written) = inner[key]! else {
                out.append(FileReference(property: property, written: "", resolved: .failure(.malformed)))
                continue
            }
            out.append(FileReference(property: property, written: written, resolved: resolve(written, documentPath: documentPath)))
        }
        return out
    }

    /// Whether compact JSON text may hold a reference at all: a byte search for the quoted key,
    /// which lets bulk paths skip parsing and look-ups for the documents that cannot.
    public static func mayAppear(in json: String) -> Bool {
        json.utf8.withContiguousStorageIfAvailable(containsQuotedKey) ?? Array(json.utf8).withUnsafeBufferPointer(containsQuotedKey)
    }

    /// Looks for `"$file"`: `$` is rare in JSON text, so memchr finds the candidates.
    private static func containsQuotedKey(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, bytes.count >= 7 else { return false }
        let tail = Array("file\"".utf8)
        var offset = 1
        while offset + 5 < bytes.count, let hit = memchr(base + offset, Int32(UInt8(ascii: "$")), bytes.count - offset - 5) {
            let at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if bytes[at - 1] == UInt8(ascii: "\""), memcmp(base + at + 1, tail, tail.count) == 0 { return true }
            offset = at + 1
        }
        return false
    }

    /// The key a `{"$file": …}` value that came from the server is kept under in the local file.
    ///
    /// A file leaves the machine only if the user wrote its reference. The agent never sends a
    /// reference on the wire (the server holds the uploaded file's URL), so one arriving from the
    /// server was put there by someone else: taken as it is, the next save of the document would
    /// upload whatever it names (`../.git/config`). It is shown in the file under this key instead,
    /// which is not a reference; a user who wants that file attached renames the key to `$file`.
    public static let fromServerKey = "$file-from-server"

    /// `body` (a document from the server) with each top-level reference object defused: its
    /// `$file` member renamed to ``fromServerKey`` (dropped if that key is there already).
    public static func defused(_ body: JSONObject) -> JSONObject {
        guard body.members.contains(where: { isReference($0.value) }) else { return body }
        // Built member by member in one pass (setting each looks its key up first: quadratic in a
        // document of many members).
        return JSONObject(body.members.map { member in
            guard case .object(let inner) = member.value, inner[key] != nil else { return member }
            let renamedAlready = inner[fromServerKey] != nil
            let safe = inner.members.compactMap { inner -> (key: String, value: JSONValue)? in
                inner.key != key ? inner : renamedAlready ? nil : (fromServerKey, inner.value)
            }
            return (member.key, .object(JSONObject(safe)))
        })
    }

    /// Whether `value` is a reference object (a wire value never is one).
    public static func isReference(_ value: JSONValue?) -> Bool {
        guard case .object(let inner)? = value else { return false }
        return inner[key] != nil
    }

    /// Resolves `written` against the folder of `documentPath`, lexically: `..` may climb to the
    /// root and no further; absolute paths are refused. Symlinks are checked by the agent, which
    /// looks at the disk.
    public static func resolve(_ written: String, documentPath: String) -> Result<String, FileReferenceProblem> {
        if written.isEmpty { return .failure(.empty) }
        if written.utf8.contains(0) { return .failure(.malformed) }
        if written.hasPrefix("/") || written.hasPrefix("~") { return .failure(.absolute(written)) }
        var parts = documentPath.split(separator: "/").dropLast().map(String.init)
        for part in written.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                guard !parts.isEmpty else { return .failure(.outsideRoot(written)) }
                parts.removeLast()
            default: parts.append(String(part))
            }
        }
        guard !parts.isEmpty else { return .failure(.notAFile(written)) }
        if parts[0] == ".docsync" { return .failure(.stateFolder(written)) }
        return .success(parts.joined(separator: "/"))
    }
}

/// Why a file reference cannot be uploaded. The document still syncs; the property is `null` on
/// the server until the reference is fixed.
public enum FileReferenceProblem: Error, Sendable, Hashable, CustomStringConvertible {
    case malformed
    case empty
    case absolute(String)
    case outsideRoot(String)
    case symlinkOutside(String)
    case stateFolder(String)
    case missing(String)
    case notAFile(String, kind: String = "a folder")
    /// The property's name cannot name a file job (it becomes part of keys and file names).
    case propertyName(String, reason: String)
    case unreadable(String, reason: String)
    /// Being written right now: read again when it settles; meanwhile the server keeps what it has.
    case changing(String)
    /// Large, and being hashed away from the documents' path: uploaded once its hash is known;
    /// meanwhile the server keeps what it has.
    case hashing(String)
    /// The endpoint keeps fewer files per document, and earlier properties took them.
    case beyondLimit(String, limit: Int, taken: [String])
    /// Larger than the agent sends (`--max-upload-size`): not read, not sent.
    case tooLarge(String, size: Int64, limit: Int64)

    public var description: String {
        switch self {
        case .malformed: "a file reference is {\"$file\": \"relative/path\"} with nothing else in it"
        case .empty: "the file reference is empty"
        case .absolute(let p): "\(p) is an absolute path; use a path relative to the document's folder"
        case .outsideRoot(let p): "\(p) leaves the synced folder"
        case .symlinkOutside(let p): "\(p) is a symlink pointing outside the synced folder"
        case .stateFolder(let p): "\(p) is inside docsync's own .docsync folder"
        case .missing(let p): "\(p) does not exist"
        case .notAFile(let p, let kind): "\(p) is \(kind), not a file"
        case .propertyName(let name, let reason): "the property \"\(LogText.escaped(name))\" cannot carry a file: \(reason)"
        case .unreadable(let p, let reason): "\(p) cannot be read: \(reason)"
        case .changing(let p): "\(p) changed while being read; it is read again when it settles"
        case .hashing(let p): "\(p) is being hashed; it is uploaded once its hash is known"
        case .tooLarge(let p, let size, let limit): "\(p) is \(size) bytes, over the \(limit) a file may have to be sent (--max-upload-size)"
        case .beyondLimit(let p, let limit, let taken):
            "\(p) is not sent: the server keeps \(limit == 1 ? "one file" : "\(limit) files") per document, and \(taken.map { "\"\($0)\"" }.joined(separator: ", ")) \(taken.count == 1 ? "has it" : "have them")"
        }
    }
}
