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
    /// What is sent in place of the file's bytes, made from them as they are read (an encrypted
    /// folder's seal); `nil`: the bytes themselves.
    public var encoding: (any UploadEncoding)?

    public init(path: String, size: Int64, fileName: String, targetID: String, targetDocType: String, targetProperty: String) {
        self.path = path
        self.size = size
        self.fileName = fileName
        self.targetID = targetID
        self.targetDocType = targetDocType
        self.targetProperty = targetProperty
    }
}

/// Bytes sent instead of a file's own, made from them while the request is sent, so that no
/// transformed copy of the file is written first.
public protocol UploadEncoding: Sendable {
    /// How many bytes are sent for a file of `size` bytes (the request's length is known before).
    func encodedSize(of size: Int64) -> Int64
    /// One pass over a file of `size` bytes; a request sent again makes a new one.
    func encoder(size: Int64) -> any UploadEncoder
}

/// One pass of an ``UploadEncoding``: the file's bytes go in, in order and in pieces of any size;
/// what may be sent so far comes out.
public protocol UploadEncoder: AnyObject {
    func encode(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) throws
    /// After the file's last byte: what is still to send. Throws when fewer bytes came than `size`.
    func finish(into out: inout [UInt8]) throws
}

/// How far an upload has got, readable from any task while it runs: bytes sent and the SHA-256 of
/// exactly those bytes (what the server stored, even if the file changed since it was hashed).
/// (`@unchecked`: both fields are only touched under `lock`.)
public final class UploadProgress: @unchecked Sendable {
    private let lock = Mutex(())
    private var sent: Int64 = 0
    private var hasher = ContentHasher()
    /// Whether the bytes are hashed: not when nothing will compare the hash (a sealed file's
    /// bytes, which the seal itself checks when they come back), a pass of SHA-256 saved.
    public let hashing: Bool

    public init(hashing: Bool = true) { self.hashing = hashing }

    public var bytesSent: Int64 { lock.withLock { _ in sent } }

    /// The hash of everything sent so far (the whole file once the upload succeeded).
    public func sha256() -> String { lock.withLock { _ in hasher.finalize() } }

    /// Counts bytes as they leave (an adapter calls this for each chunk it sends).
    public func sent(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock { _ in
            sent += Int64(bytes.count)
            if hashing { hasher.update(bytes) }
        }
    }
}
