import DocsyncModel
import Synchronization

/// A file a document's property points at on the server (an upload someone else attached), as
/// an adapter recognises it: where it is served, and what it must hash to.
public struct RemoteFile: Sendable, Hashable {
    /// The URL exactly as the property holds it.
    public var url: String
    /// The SHA-256 the server names for it (in the URL, or in the document's metadata), lowercase
    /// hex; `nil` when the server names none (then whatever arrives is taken).
    public var sha256: String?
    /// The size the server announces, when it does (checked against the download limit up front).
    public var size: Int64?
    /// The extension the file had where it came from, letters and digits only (`pdf`), or `nil`.
    /// Only this much of the server's naming reaches the folder: the name is built locally.
    public var fileExtension: String?

    public init(url: String, sha256: String?, size: Int64? = nil, fileExtension: String? = nil) {
        self.url = url
        self.sha256 = sha256
        self.size = size
        self.fileExtension = fileExtension
    }

    /// `name`'s extension when it is 1–10 ASCII letters or digits (lowercased), else `nil`.
    public static func safeExtension(of name: Substring) -> String? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let ext = name[name.index(after: dot)...]
        guard (1...10).contains(ext.utf8.count), ext.utf8.allSatisfy({ $0 < 0x80 && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber) })
        else { return nil }
        return ext.lowercased()
    }

    /// Whether `text` is 64 lowercase hex digits.
    public static func isSHA256(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// What an adapter makes of a property's value.
public enum RemoteFileMatch: Sendable, Hashable {
    /// One of the endpoint's own files: fetched.
    case file(RemoteFile)
    /// Shaped like a file of such an endpoint but not fetched (another server's, say): reported.
    case refused(url: String, reason: String)
}

/// How far a download has got, readable from any task while it runs.
public final class DownloadProgress: Sendable {
    private let received = Atomic<Int64>(0)

    public init() {}

    public var bytesReceived: Int64 { received.load(ordering: .relaxed) }

    public func add(_ count: Int) { received.add(Int64(count), ordering: .relaxed) }
}

/// A property of a pulled document that holds one of the endpoint's files, or something like one
/// (see ``DocumentEndpoint/remoteFiles(in:)``).
public struct RemoteFileFound: Sendable, Hashable {
    public var property: String
    public var match: RemoteFileMatch

    public init(property: String, match: RemoteFileMatch) {
        self.property = property
        self.match = match
    }
}
