/// What `stat` says about a file: enough to tell "unchanged" without reading it.
public struct FileStat: Sendable, Hashable {
    public var size: Int64
    /// Nanoseconds since 1970, or ``unsettled``.
    public var mtimeNs: Int64
    public var inode: UInt64

    /// The mtime of a stat taken so soon after the file changed that a change right after it may
    /// have left the same stat (same size, and an mtime in the same tick of the kernel's coarse
    /// clock: "racily clean" in git's words). No file has it, so the next look reads the file.
    public static let unsettled = Int64.min

    /// Whether the stat may be trusted to tell a later change: false if it is unsettled.
    public var isSettled: Bool { mtimeNs != Self.unsettled }

    public init(size: Int64, mtimeNs: Int64, inode: UInt64) {
        self.size = size
        self.mtimeNs = mtimeNs
        self.inode = inode
    }
}

/// One file of the tree as the index last saw it.
public struct FileRow: Sendable, Hashable {
    /// `excluded`: a document of a docType this folder does not sync (reported, not sent).
    public enum State: String, Sendable { case ok, invalid, excluded }

    public var path: String
    public var docID: String?
    public var docType: String?
    public var hash: String?
    public var stat: FileStat
    public var state: State
    public var error: String?

    public init(path: String, docID: String?, docType: String?, hash: String?, stat: FileStat, state: State, error: String?) {
        self.path = path
        self.docID = docID
        self.docType = docType
        self.hash = hash
        self.stat = stat
        self.state = state
        self.error = error
    }
}

/// One document as the agent knows it, live or tombstoned.
public struct DocumentRow: Sendable, Hashable {
    public enum State: String, Sendable { case pending, synced, rejected }

    public var id: String
    public var docType: String
    public var path: String?
    /// Compact JSON of the document without the sync stamps.
    public var body: String
    public var bodyHash: String
    public var pushedHash: String?
    public var updatedAt: Int64?
    public var deletedAt: Int64?
    public var serverRev: Int64?
    public var base: String?
    public var state: State
    public var error: String?

    public init(
        id: String, docType: String, path: String?, body: String, bodyHash: String, pushedHash: String? = nil,
        updatedAt: Int64? = nil, deletedAt: Int64? = nil, serverRev: Int64? = nil, base: String? = nil,
        state: State = .pending, error: String? = nil
    ) {
        self.id = id
        self.docType = docType
        self.path = path
        self.body = body
        self.bodyHash = bodyHash
        self.pushedHash = pushedHash
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
        self.serverRev = serverRev
        self.base = base
        self.state = state
        self.error = error
    }
}

/// A unit of pending work for the endpoint, as read from the outbox. There is at most one per
/// key: newer local states replace the payload (and bump `version`) so ten offline saves send one
/// request.
///
/// A class: entries are read by the thousand and passed along from the read to the request to the
/// acknowledgement, and a struct of seven strings cost seven reference counts at every copy.
public final class OutboxEntry: Sendable {
    public let seq: Int64
    public let key: OutboxKey
    public let docID: String
    public let kind: OutboxKind
    public let version: Int64
    public let payload: String
    public let bodyHash: String
    public let queuedAt: Int64
    public let attempts: Int
    public let nextAttemptAt: Int64
    public let lastError: String?
    /// The revision the document was at when the entry was read: what the write is based on.
    public let serverRev: Int64?
    /// The document's integer key in the index (`nil` if it has no row): what acknowledgements find it by.
    public let docKey: Int64?
    /// The document's docType (`nil` if it has no row).
    public let docType: String?

    public init(
        seq: Int64, key: OutboxKey, docID: String, kind: OutboxKind, version: Int64, payload: String, bodyHash: String, queuedAt: Int64,
        attempts: Int, nextAttemptAt: Int64, lastError: String?, serverRev: Int64?, docKey: Int64?, docType: String? = nil
    ) {
        self.seq = seq
        self.key = key
        self.docID = docID
        self.kind = kind
        self.version = version
        self.payload = payload
        self.bodyHash = bodyHash
        self.queuedAt = queuedAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.serverRev = serverRev
        self.docKey = docKey
        self.docType = docType
    }

    /// A put entry's `bodyHash`: the document's body hash, marked when the entry sends a deletion
    /// (a tombstone of the same body is another change).
    public static func bodyHash(_ documentHash: String, deleted: Bool) -> String { deleted ? deletionMark + documentHash : documentHash }
    static let deletionMark = "deleted:"

    /// The start of `lastError` for a write the token may not make (HTTP 403): such an entry waits
    /// for its file or the token to change, or a long while, and `status` lists it as not allowed.
    public static let notAllowedMark = "not allowed:"

    /// Whether this entry sends a deletion.
    public var isDeletion: Bool { bodyHash.hasPrefix(Self.deletionMark) }
    /// The document's body hash the entry was made from, without a deletion's mark.
    public var documentHash: String { isDeletion ? String(bodyHash.dropFirst(Self.deletionMark.count)) : bodyHash }
}

/// The part of a file row a rescan needs to decide "unchanged".
public struct FileSummary: Sendable, Hashable {
    public var stat: FileStat
    public var state: FileRow.State
}

/// One FileUpload job: the file a document's property refers to, and what the server has of it.
public struct UploadRow: Sendable, Hashable {
    public enum State: String, Sendable {
        case pending, uploading, done, failed, invalid, removed
        /// Its file is large and being hashed away from the documents' path: no upload queued yet.
        case hashing
    }

    public var docID: String
    public var property: String
    public var reference: String?
    public var path: String?
    public var sha256: String?
    public var stat: FileStat?
    public var state: State
    public var error: String?
    public var bytesSent: Int64
    public var remoteURL: String?
    public var uploadedSHA256: String?
    /// The server's revision that our upload made (`nil`: unknown, or the URL came from a pull):
    /// a pulled version no newer than it was written before the URL and says nothing of the file.
    public var remoteRev: Int64?

    public init(
        docID: String, property: String, reference: String?, path: String?, sha256: String? = nil, stat: FileStat? = nil,
        state: State, error: String? = nil, bytesSent: Int64 = 0, remoteURL: String? = nil, uploadedSHA256: String? = nil,
        remoteRev: Int64? = nil
    ) {
        self.docID = docID
        self.property = property
        self.reference = reference
        self.path = path
        self.sha256 = sha256
        self.stat = stat
        self.state = state
        self.error = error
        self.bytesSent = bytesSent
        self.remoteURL = remoteURL
        self.uploadedSHA256 = uploadedSHA256
        self.remoteRev = remoteRev
    }

    /// The outbox key of this job.
    public var outboxKey: OutboxKey { .upload(docID: docID, property: property) }
}
