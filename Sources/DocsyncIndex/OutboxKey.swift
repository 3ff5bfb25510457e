/// What an outbox entry asks of the endpoint. Stored as its raw value (`outbox.kind`), and
/// written into the SQL as a literal: the partial indexes of uploads and downloads serve only
/// statements that name the kind.
public enum OutboxKind: String, Sendable, CaseIterable {
    /// A document's state (a write or a deletion) to send.
    case put
    /// A file a document refers to, to upload.
    case upload
    /// A file a pulled document refers to, to download.
    case download

    /// The kind as an SQL literal (`'upload'`).
    var literal: String { "'\(rawValue)'" }

    /// Upload and download entries are read through their own index: the planner would rather
    /// walk the whole outbox in `seq` order than sort the few due.
    var indexedBy: String {
        switch self {
        case .put: ""
        case .upload: " INDEXED BY outbox_upload"
        case .download: " INDEXED BY outbox_download"
        }
    }
}

/// An outbox entry's key: at most one entry per document's state, per file to upload and per
/// file to download, each replaced by a newer one. Stored as text (`doc:ID`,
/// `upload:ID:PROPERTY`, `download:ID:PROPERTY`), which some statements build in SQL; made only
/// here.
public struct OutboxKey: Hashable, Sendable, CustomStringConvertible {
    /// The key as stored.
    public let text: String

    /// A key read from the outbox.
    init(stored text: String) { self.text = text }

    /// The entry of document `id`'s state.
    public static func document(_ id: String) -> OutboxKey { OutboxKey(stored: "doc:" + id) }

    /// The entry of the upload of `docID`'s file at `property`.
    public static func upload(docID: String, property: String) -> OutboxKey { OutboxKey(stored: "upload:\(docID):\(property)") }

    /// The entry of the download of `docID`'s file at `property`.
    public static func download(docID: String, property: String) -> OutboxKey { OutboxKey(stored: "download:\(docID):\(property)") }

    /// The property named by an upload or download key of `docID`; `nil` for any other key.
    public func property(of docID: String, kind: OutboxKind) -> String? {
        let prefix = "\(kind.rawValue):\(docID):"
        guard kind != .put, text.hasPrefix(prefix) else { return nil }
        return String(text.dropFirst(prefix.count))
    }

    /// The key of a document's state made in SQL from the column holding its id.
    static func sqlDocument(id column: String) -> String { "'doc:' || \(column)" }

    /// The key of an upload or download made in SQL from the columns holding its document's id
    /// and its property.
    static func sql(_ kind: OutboxKind, docID: String, property: String) -> String { "'\(kind.rawValue):' || \(docID) || ':' || \(property)" }

    public var description: String { text }
}
