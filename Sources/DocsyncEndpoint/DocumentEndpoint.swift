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

    /// The document with `id` as the server holds it now, or `nil` when it has none. Throws
    /// ``EndpointError/unsupported(_:)`` when the server cannot be asked for one document: never
    /// `nil` for "cannot tell".
    func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject?

    /// Sends a file for one property of a document; returns the document as stored, the property
    /// set to the file's URL. Throws ``EndpointError/unsupported(_:)`` without uploads.
    func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject

    /// The properties of `document` (as pulled) that hold one of this endpoint's files, or a value
    /// that looks like one but is not fetched (and why), in the document's order; ordinary values
    /// are left out. One pass over the document, whatever it holds: asked one property at a time,
    /// each ask looked the property up, and a document of 300,000 strings took minutes.
    func remoteFiles(in document: JSONObject) -> [RemoteFileFound]

    /// Streams `file` to `sink`, chunk by chunk, counting into `progress`; refuses (before or
    /// while receiving) more than `maxBytes`. Hashing and storing are the caller's.
    func download(
        _ file: RemoteFile, maxBytes: Int64, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError)

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

    public func remoteFiles(in document: JSONObject) -> [RemoteFileFound] { [] }

    public func download(
        _ file: RemoteFile, maxBytes: Int64, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError) {
        throw .unsupported("\(location) serves no files")
    }
}
