import DocsyncModel

/// The rules that make a document store correct, kept apart from any storage so that every store
/// applies the same ones: what a client may send, what a write stores (revision, stamps,
/// tombstone, size), and what a tombstone and an attachment change.
public enum StoreRules {
    /// Validates a document the client sent: an object with a string `docType` and, when
    /// `requireID`, a safe string `id`. `measure`: the caller's parse could not rule out nesting
    /// deeper than ``ProtocolLimits/maxDocumentDepth`` or more values than
    /// ``ProtocolLimits/maxDocumentRequestValues`` (checked here, per document, so one such
    /// document in a batch is refused alone).
    public static func validate(_ value: JSONValue, requireID: Bool, measure: Bool = false) throws(StoreError) -> JSONObject {
        guard case .object(let object) = value else { throw StoreError(.invalid, "the document must be a JSON object, not \(value.kindName)") }
        if measure {
            // One walk for both limits.
            let shape = value.shape
            if shape.depth > ProtocolLimits.maxDocumentDepth {
                throw StoreError(.invalid, "the document is nested deeper than \(ProtocolLimits.maxDocumentDepth) levels")
            }
            if shape.values > ProtocolLimits.maxDocumentRequestValues { throw tooManyValues }
        }
        guard let docType = object["docType"] else { throw StoreError(.invalid, "the document has no \"docType\"") }
        guard case .string(let type) = docType else { throw StoreError(.invalid, "\"docType\" must be a string") }
        if let why = DocumentRules.docTypeProblem(type) { throw StoreError(.invalid, "invalid \"docType\": \(why)") }
        if let id = object["id"] {
            guard case .string(let s) = id, DocumentRules.isSafeIdentifier(s) else {
                throw StoreError(.invalid, "\"id\" must be a string of letters, digits, '_' and '-' (at most 128)")
            }
        } else if requireID {
            throw StoreError(.invalid, "the document has no \"id\"")
        }
        return object
    }

    /// A document over ``ProtocolLimits/maxDocumentRequestValues``: too large, as one over its bytes.
    public static let tooManyValues = StoreError(
        .tooLarge, "the document holds more than \(ProtocolLimits.maxDocumentRequestValues) values, the most a document may have")

    /// A write the store is to make: the document as stored and the columns it is found by.
    public struct Version: Sendable {
        public var id: String
        public var docType: String
        public var object: JSONObject
        /// The stored text: compact JSON, the client's key order and number literals.
        public var body: String
        public var rev: Int64
        public var updatedAt: Int64
        public var deletedAt: Int64?
    }

    /// What a write finds stored under its id: the revision and the docType.
    public struct Existing: Sendable, Hashable {
        public var rev: Int64
        public var docType: String

        public init(rev: Int64, docType: String) {
            self.rev = rev
            self.docType = docType
        }
    }

    /// What writing `input` over a document at `existingRev` (`nil`: none) stores, with every
    /// right: the store has not read the stored docType (a write that guesses the revision).
    public static func write(
        _ input: JSONObject, existingRev: Int64?, ifMatch: Int64?, mustCreate: Bool, now: Int64, maxBytes: Int
    ) throws(StoreError) -> Version {
        let docType = input["docType"]?.string ?? ""
        return try write(
            input, existing: existingRev.map { Existing(rev: $0, docType: docType) }, ifMatch: ifMatch, mustCreate: mustCreate, now: now,
            maxBytes: maxBytes, access: .everything)
    }

    /// What writing `input` over `existing` (`nil`: none) stores. Throws 403 when `access` does
    /// not give the right (checked first: a refused writer is not shown the current document),
    /// 409 (without the current document, which the store adds) when `mustCreate` finds one or
    /// `ifMatch` is not the stored revision, 413 when the stored text is over `maxBytes`.
    public static func write(
        _ input: JSONObject, existing: Existing?, ifMatch: Int64?, mustCreate: Bool, now: Int64, maxBytes: Int, access: Access
    ) throws(StoreError) -> Version {
        var object = input
        let id = object["id"]?.string ?? ""
        if let refusal = access.refusal(writing: object["docType"]?.string ?? "", id: id, over: existing) { throw refusal }
        let existingRev = existing?.rev
        if mustCreate, existingRev != nil { throw StoreError(.conflict, "a document with id \(id) exists already; PUT updates it") }
        if let ifMatch, (existingRev ?? 0) != ifMatch {
            throw StoreError(.conflict, "revision \(ifMatch) is not current (current: \(existingRev ?? 0))")
        }
        let rev = (existingRev ?? 0) + 1
        // The change's own time, if the client stamped one (offline work is stamped when it was
        // made, in server-calibrated time) and it is not in the future; otherwise now.
        let updatedAt = stamp(object[DocumentRules.updatedAtKey], now: now) ?? now
        object[DocumentRules.updatedAtKey] = .string(Timestamp(unixMilliseconds: updatedAt).rfc3339)
        var deletedAt: Int64?
        if let d = object[DocumentRules.deletedAtKey], !d.isNull {
            let at = stamp(d, now: now) ?? now
            deletedAt = at
            object[DocumentRules.deletedAtKey] = .string(Timestamp(unixMilliseconds: at).rfc3339)
        } else {
            object[DocumentRules.deletedAtKey] = nil
        }
        object[DocumentRules.revKey] = .number(String(rev))
        let body = JSONWriter.string(.object(object))
        // Every route, the batch call included: what is stored is what any agent can take back.
        if body.utf8.count > maxBytes + ProtocolLimits.envelopeSlack {
            throw StoreError(.tooLarge, "the document is \(body.utf8.count) bytes, over the limit of \(maxBytes)")
        }
        return Version(
            id: id, docType: object["docType"]?.string ?? "", object: object, body: body, rev: rev, updatedAt: updatedAt, deletedAt: deletedAt)
    }

    /// `object` as written by `author` (the name of the request's token; `nil`: no name): whatever
    /// the client sent as `updated_by` is replaced, so no writer can pass as another.
    public static func authored(_ object: JSONObject, by author: String?) -> JSONObject {
        var object = object
        object[DocumentRules.updatedByKey] = author.map { .string($0) }
        return object
    }

    /// ``authored(_:by:)`` for a batch call's documents (what is not an object is refused later).
    public static func authored(_ documents: [JSONValue], by author: String?) -> [JSONValue] {
        documents.map { value in value.object.map { .object(authored($0, by: author)) } ?? value }
    }

    /// A client stamp the store accepts: a well-formed RFC 3339 time no later than `now` (+2 s for
    /// rounding and calibration error). A stamp from the future is replaced by `now`.
    public static func stamp(_ value: JSONValue?, now: Int64) -> Int64? {
        guard let s = value?.string, let t = Timestamp(rfc3339: s) else { return nil }
        return t.unixMilliseconds <= now + 2000 ? min(t.unixMilliseconds, now) : nil
    }

    /// The body a delete stores over `stored` (of `storedType`); `nil` when it is a tombstone
    /// already. A document the token may neither read nor write is answered as one that is not
    /// there (``notFoundFor(_:storedType:access:)``).
    public static func tombstone(
        of stored: String, storedType: String, id: String, docType: String, now: Int64, author: String?, access: Access = .everything
    ) throws -> JSONObject? {
        try notFoundFor(id, storedType: storedType, access: access)
        guard storedType == docType else { throw StoreError(.invalid, "document \(id) has docType \(storedType), not \(docType)") }
        if let refusal = access.refusal(writing: storedType, id: id, over: Existing(rev: 0, docType: storedType), deleting: true) { throw refusal }
        guard case .object(var object) = try JSONParser.parse(stored) else { throw StoreError(.failed, "corrupt stored document") }
        if let d = object[DocumentRules.deletedAtKey], !d.isNull { return nil }
        object[DocumentRules.deletedAtKey] = .string(Timestamp(unixMilliseconds: now).rfc3339)
        object[DocumentRules.updatedAtKey] = nil
        return authored(object, by: author)
    }

    /// The body an upload stores over `stored`: `property` set to the file's URL. Refused for a
    /// document of another docType or a tombstone.
    public static func attaching(
        _ url: String, as property: String, to stored: String, storedType: String, deleted: Bool, id: String, docType: String, author: String?,
        access: Access = .everything
    ) throws -> JSONObject {
        try notFoundFor(id, storedType: storedType, access: access)
        guard storedType == docType else { throw StoreError(.invalid, "document \(id) has docType \(storedType), not \(docType)") }
        if let refusal = access.refusal(writing: storedType, id: id, over: Existing(rev: 0, docType: storedType)) { throw refusal }
        guard !deleted else { throw StoreError(.notFound, "document \(id) is deleted") }
        guard case .object(var object) = try JSONParser.parse(stored) else { throw StoreError(.failed, "corrupt stored document") }
        object[property] = .string(url)
        return authored(object, by: author)
    }

    /// A document of a docType the token may neither read nor write nor create is, to it, not
    /// there: a delete or an upload of its id is answered as for an id that does not exist.
    public static func notFoundFor(_ id: String, storedType: String, access: Access) throws(StoreError) {
        if !access.mayRead(storedType) && !access.mayCreate(storedType) { throw StoreError(.notFound, "no document with id \(id)") }
    }

    /// One document of a batch call, validated, and the revision it is based on (its `rev`, if
    /// it names one: the write is then refused unless that is still the stored revision).
    public static func batchDocument(_ value: JSONValue, measure: Bool) throws(StoreError) -> (object: JSONObject, base: Int64?) {
        let object = try validate(value, requireID: true, measure: measure)
        guard case .number(let rev)? = object[DocumentRules.revKey] else { return (object, nil) }
        return (object, Int64(rev))
    }

    /// The error entry of a batch call for a document it could not store.
    public static func batchError(id: String?, _ error: StoreError) -> JSONObject {
        var entry = JSONObject([(key: "id", value: id.map { .string($0) } ?? .null), (key: "message", value: .string(error.message))])
        if let current = error.current { entry["current"] = current }
        if error.currentIsCallers { entry["yours"] = true }
        // A refusal of rights says so, and which right: the agent holds that document, not the batch.
        if error.kind == .forbidden {
            entry["status"] = .number("403")
            if let right = error.right { entry["right"] = .string(right) }
        }
        return entry
    }
}
