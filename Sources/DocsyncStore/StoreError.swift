import DocsyncModel

/// Why a store, or a rule every store keeps, refused a request: what it means, not how a protocol
/// says it. The reference endpoint turns it into HTTP in one place (`ReferenceServer.status(of:)`).
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The request breaks a document rule, or is not what the call takes.
        case invalid
        case notFound
        /// Not over the stored revision (or created twice): `current` holds the stored document.
        case conflict
        /// Over a size limit.
        case tooLarge
        /// The storage cannot be reached, or is gone: try again later.
        case unavailable
        /// No space left to store it.
        case full
        /// The store failed (a corrupt row, a database error).
        case failed
        /// The token may not do this (``Access``): `right` names the right it lacks.
        case forbidden
    }

    public var kind: Kind
    public var message: String
    /// For ``Kind/conflict``: the document as currently stored.
    public var current: JSONValue?
    /// For ``Kind/conflict``: the current version was written by the client that asks (its
    /// reply was lost), so the client's change is not in conflict with anyone.
    public var currentIsCallers = false
    /// For ``Kind/forbidden``: the right that is missing (`write:note`).
    public var right: String?

    public init(_ kind: Kind, _ message: String, current: JSONValue? = nil, right: String? = nil) {
        self.kind = kind
        self.message = message
        self.current = current
        self.right = right
    }

    public var description: String { message }

    /// This conflict with what the store holds attached: the current document, and whether the
    /// client that asks wrote it (`writer` is the stored version's client, `client` the asker's).
    /// A current document the asker may not read is not attached (``Access``): the conflict is
    /// said without it.
    public func holding(_ current: JSONValue?, writtenBy writer: String?, asking client: String?, access: Access = .everything) -> StoreError {
        let readable = current.flatMap { $0.object?["docType"]?.string }.map(access.mayRead) ?? true
        var refusal = StoreError(kind, message, current: readable ? current : nil)
        refusal.currentIsCallers = readable && current != nil && client != nil && writer == client
        return refusal
    }
}
