import DocsyncModel

/// What one token may do, by docType: the rights of a `--token-file` line (docs/OPERATIONS.md).
///
/// - `read:T` lists, pulls, long-polls and fetches documents of docType `T` (and the files
///   attached to them);
/// - `write:T` creates, updates and deletes them;
/// - `create:T` creates new documents of `T` only: no update, no delete, no read.
///
/// `T` is a docType or `*`. Writing documents of docType `schema` (the schemas of every docType)
/// needs `write:schema` by name: `write:*` does not give it. A line without rights has every
/// right (``everything``), as before rights existed. The rules are here, once, and every store
/// applies them where it reads what a write would change (``StoreRules/write(_:existing:ifMatch:mustCreate:now:maxBytes:access:)``).
public struct Access: Sendable, Hashable, CustomStringConvertible {
    /// One kind of right: the docTypes named, and whether `*` was.
    public struct Grant: Sendable, Hashable {
        public var any: Bool
        public var types: Set<String>

        public init(any: Bool = false, types: Set<String> = []) {
            self.any = any
            self.types = types
        }

        var isEmpty: Bool { !any && types.isEmpty }
    }

    public var read: Grant
    public var write: Grant
    public var create: Grant
    /// Every right, the schema docType's included: a token line without rights.
    public private(set) var isEverything: Bool

    public static let everything = Access(read: Grant(any: true), write: Grant(any: true), create: Grant(any: true), isEverything: true)

    public init(read: Grant = Grant(), write: Grant = Grant(), create: Grant = Grant()) {
        self.init(read: read, write: write, create: create, isEverything: false)
    }

    private init(read: Grant, write: Grant, create: Grant, isEverything: Bool) {
        self.read = read
        self.write = write
        self.create = create
        self.isEverything = isEverything
    }

    /// The rights of a token line (`read:*`, `write:note`, `create:report`); none: ``everything``.
    public init(rights: [String]) throws(AccessError) {
        guard !rights.isEmpty else {
            self = .everything
            return
        }
        self.init()
        for right in rights {
            guard let colon = right.firstIndex(of: ":") else { throw AccessError(right: right, reason: "a right is read:T, write:T or create:T") }
            let (kind, type) = (String(right[..<colon]), String(right[right.index(after: colon)...]))
            if type != "*", let why = DocumentRules.docTypeProblem(type) { throw AccessError(right: right, reason: "\(type) is not a docType: \(why)") }
            switch kind {
            case "read": read.add(type)
            case "write": write.add(type)
            case "create": create.add(type)
            default: throw AccessError(right: right, reason: "\(kind) is not a right (read, write or create)")
            }
        }
    }

    /// Whether `word` has the shape of a right (`kind:T`, kind in lower-case letters), to tell
    /// rights from a token on a line. A hashed token (`sha256:…`) is not one.
    public static func looksLikeRight(_ word: String) -> Bool {
        guard let colon = word.firstIndex(of: ":") else { return false }
        let kind = word[..<colon]
        return !kind.isEmpty && kind != "sha256" && kind.utf8.allSatisfy { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") }
    }

    public func mayRead(_ docType: String) -> Bool { read.covers(docType, everything: isEverything, guarded: false) }
    public func mayWrite(_ docType: String) -> Bool { write.covers(docType, everything: isEverything, guarded: true) }
    public func mayCreate(_ docType: String) -> Bool { mayWrite(docType) || create.covers(docType, everything: isEverything, guarded: true) }
    /// Whether every docType may be read: what counts across the store (`/api/stats`, metrics) need.
    public var readsEverything: Bool { read.any }

    /// `selection` narrowed to the docTypes this token may read.
    public func readable(_ selection: TypeSelection) -> TypeSelection {
        guard !read.any else { return selection }
        return TypeSelection(only: selection.only.map { $0.intersection(read.types) } ?? read.types, except: selection.except)
    }

    /// Why writing a document of `docType` (id `id`) over `existing` (`nil`: none) is refused, or
    /// nil. A refusal about a document the token may not read never names its docType.
    public func refusal(writing docType: String, id: String, over existing: StoreRules.Existing?, deleting: Bool = false) -> StoreError? {
        if isEverything { return nil }
        guard let existing else {
            if deleting { return nil }  // nothing there: the store says so
            return mayCreate(docType) ? nil : StoreError(.forbidden, "this token may not create documents of docType \(docType)", right: "create:\(docType)")
        }
        guard mayWrite(existing.docType) else {
            // Naming the docType tells nothing new to a token that may read it or create it, or
            // that named it itself.
            if mayRead(existing.docType) || mayCreate(existing.docType) || existing.docType == docType {
                return StoreError(.forbidden, "this token may not change documents of docType \(existing.docType)", right: "write:\(existing.docType)")
            }
            return StoreError(.forbidden, "this token may not write document \(id)", right: "write")
        }
        return mayWrite(docType) ? nil : StoreError(.forbidden, "this token may not write documents of docType \(docType)", right: "write:\(docType)")
    }

    /// `read:* write:note` as a token line says it; empty for ``everything``.
    public var description: String {
        guard !isEverything else { return "" }
        func words(_ kind: String, _ grant: Grant) -> [String] { (grant.any ? ["\(kind):*"] : []) + grant.types.sorted().map { "\(kind):\($0)" } }
        return (words("read", read) + words("write", write) + words("create", create)).joined(separator: " ")
    }
}

extension Access.Grant {
    mutating func add(_ type: String) {
        if type == "*" { any = true } else { types.insert(type) }
    }

    /// `guarded`: the schema docType is covered only by name (or by every right).
    func covers(_ docType: String, everything: Bool, guarded: Bool) -> Bool {
        if everything || types.contains(docType) { return true }
        return any && !(guarded && docType == Access.schemaDocType)
    }
}

extension Access {
    /// The docType of schema documents (`DocTypeSchemas.docType`): writing them needs its own right.
    public static let schemaDocType = "schema"
}

/// A right that does not parse, and why.
public struct AccessError: Error, Sendable, CustomStringConvertible {
    public var right: String
    public var reason: String
    public var description: String { "\(right): \(reason)" }
}
