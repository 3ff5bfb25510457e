import DocsyncModel
import Synchronization

/// One FileUpload: a file of the tree and the document property it fills.
public struct FileUploadRequest: Sendable {
    /// Absolute path of the file to send.
    public var path: String
    /// Bytes to send: the size the file had when it was hashed. A file that is shorter when read
    /// fails the upload (it changed; the watcher brings the new version).
    public var size: Int64
    /// The name the server is told (the file's last path component).
    public var fileName: String
    public var targetID: String
    public var targetDocType: String
    public var targetProperty: String

    public init(path: String, size: Int64, fileName: String, targetID: String, targetDocType: String, targetProperty: String) {
        self.path = path
        self.size = size
        self.fileName = fileName
        self.targetID = targetID
        self.targetDocType = targetDocType
        self.targetProperty = targetProperty
    }
}

/// How far an upload has got, readable from any task while it runs: bytes sent and the SHA-256 of
/// exactly those bytes (what the server stored, even if the file changed since it was hashed).
/// (`@unchecked`: both fields are only touched under `lock`.)
public final class UploadProgress: @unchecked Sendable {
    private let lock = Mutex(())
    private var sent: Int64 = 0
    private var hasher = ContentHasher()

    public init() {}

    public var bytesSent: Int64 { lock.withLock { _ in sent } }

    /// The hash of everything sent so far (the whole file once the upload succeeded).
    public func sha256() -> String { lock.withLock { _ in hasher.finalize() } }

    /// Counts bytes as they leave (an adapter calls this for each chunk it sends).
    public func sent(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock { _ in
            sent += Int64(bytes.count)
            hasher.update(bytes)
        }
    }
}
