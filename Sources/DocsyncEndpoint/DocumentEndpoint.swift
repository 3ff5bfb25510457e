import DocsyncClock
import DocsyncModel

/// What the sync engine needs from a document server, and all it knows of one.
///
/// An adapter (the reference endpoint's routes, sync-rails, …) implements this for one
/// kind of server; the engine never sees a route, a status code or a server's wording. The
/// contract every adapter keeps is written as tests in `EndpointConformanceTests`.
///
/// - Documents travel as the folder's wire form (``WireForm``): `id`, `docType`, the user's
///   fields, `updated_at`, and `deleted_at` on a tombstone. An adapter translates to and from its
///   server's shape; nothing it returns names a file or a path.
/// - Revisions are the server's, strictly increasing per document; `nil` where a server has none.
/// - Errors are ``EndpointError``s, sorted by what the engine does next.
public protocol DocumentEndpoint: AnyObject, Sendable {
    /// Where the server is, for messages: never carries a credential.
    var location: String { get }

    /// What this endpoint offers. It may sharpen after the first replies (an adapter that finds
    /// out whether its server has a batch call); the engine reads it before each decision.
    var capabilities: EndpointCapabilities { get }

    /// Replaces the credential every later request carries (the token file changed).
    func useCredential(_ credential: String)

    /// Stores `changes`, each based on the revision it names, and answers one outcome per change
    /// (keyed by document id). With `pullingAfter`, an endpoint that pulls in the same call
    /// (``EndpointCapabilities/pullsWithPush``) also returns the changes after that cursor.
    func push(_ changes: [OutgoingChange], pullingAfter cursor: SyncCursor?) async throws(EndpointError) -> PushReply

    /// The changes after `cursor` (`nil`: everything); with `wait`, a long poll held until
    /// something changes or `wait` passes. Throws ``EndpointError/unsupported(_:)`` when the
    /// server cannot be pulled from.
    func pull(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply

    /// The document with `id` as the server holds it now, or `nil` when it has none.
    func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject?

    /// Sends a file for one property of a document; returns the document as stored, the property
    /// set to the file's URL. Throws ``EndpointError/unsupported(_:)`` without uploads.
    func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject

    /// One cheap request whose reply feeds the clock given to the adapter. Throws only when no
    /// reply came at all.
    func sampleClock() async throws(EndpointError)

    /// Whether `cursor` comes after `old` (replies to calls in flight together arrive in any
    /// order; the stored cursor never moves back). By default a newer reply's cursor wins.
    func orders(_ cursor: SyncCursor, after old: SyncCursor) -> Bool
}

extension DocumentEndpoint {
    public func orders(_ cursor: SyncCursor, after old: SyncCursor) -> Bool { true }

    public func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject {
        throw .unsupported("\(location) takes no file uploads")
    }
}

/// One change on its way to the server: the document in wire form and the revision it is based on.
public struct OutgoingChange: Sendable {
    public var id: String
    public var docType: String
    /// The wire form's JSON text (tombstones carry `deleted_at`).
    public var body: String
    /// The server's revision the change was made on; `nil` for a document the server never had.
    public var baseRevision: Int64?

    public init(id: String, docType: String, body: String, baseRevision: Int64?) {
        self.id = id
        self.docType = docType
        self.body = body
        self.baseRevision = baseRevision
    }
}

/// What became of one pushed change.
public enum PushOutcome: Sendable {
    /// Stored exactly as sent, at `revision` when the server keeps revisions.
    case storedAsSent(revision: Int64?)
    /// Stored; the document as the server now holds it (it may have added or changed fields).
    case stored(JSONObject)
    /// Not stored: the error says why and what to do.
    case failed(EndpointError)
}

/// The answer to a push.
public struct PushReply: Sendable {
    public var outcomes: [String: PushOutcome]
    /// Changes made by others, when the endpoint pulls in the same call.
    public var pulled: PullReply?

    public init(outcomes: [String: PushOutcome], pulled: PullReply? = nil) {
        self.outcomes = outcomes
        self.pulled = pulled
    }
}

/// The answer to a pull.
public struct PullReply: Sendable {
    /// Documents in wire form; tombstones carry `deleted_at`. `rev` is the server's revision.
    public var changes: [JSONObject]
    /// Where the next pull starts; `nil` when this reply must not move the stored cursor.
    public var cursor: SyncCursor?
    /// More changes wait: pull again at once.
    public var more: Bool
    /// The identity of the store that answered, when the server names one (a different one
    /// means another server: everything is reconciled again).
    public var storeIdentity: String?
    /// The server's history is behind the cursor that was sent (restored from an older copy).
    public var historyBehind: Bool

    public init(changes: [JSONObject], cursor: SyncCursor?, more: Bool = false, storeIdentity: String? = nil, historyBehind: Bool = false) {
        self.changes = changes
        self.cursor = cursor
        self.more = more
        self.storeIdentity = storeIdentity
        self.historyBehind = historyBehind
    }
}

/// A position in the server's changes. Opaque to the engine: it is stored and handed back as is
/// (a sequence number for the reference endpoint, a watermark and the ids seen at it for sync-rails).
public struct SyncCursor: Sendable, Hashable, CustomStringConvertible {
    public var text: String
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// What the agent hands an adapter when it makes one for a folder.
public struct EndpointContext: Sendable {
    /// This folder's client id: a server that knows it does not echo the folder's own writes.
    public var clientID: String
    /// The clock every reply's timing and date headers feed.
    public var clock: ServerClock
    /// How long one request may take before it counts as failed.
    public var requestTimeout: Duration
    /// The token (or `user:password`), from a file or the environment.
    public var credential: String

    public init(clientID: String, clock: ServerClock, requestTimeout: Duration, credential: String) {
        self.clientID = clientID
        self.clock = clock
        self.requestTimeout = requestTimeout
        self.credential = credential
    }
}
