import AsyncHTTPClient
import DocsyncModel
import NIOCore
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// One FileUpload as PingPong sends it: a file of the tree and the document property it fills.
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
    private let lock = NIOLock()
    private var sent: Int64 = 0
    private var hasher = ContentHasher()

    public init() {}

    public var bytesSent: Int64 { lock.withLock { sent } }

    /// The hash of everything sent so far (the whole file once the upload succeeded).
    public func sha256() -> String { lock.withLock { hasher.finalize() } }

    func sent(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock {
            sent += Int64(bytes.count)
            hasher.update(bytes)
        }
    }
}

extension PingPongEndpoint {
    /// `POST /api/app/upload`: streams the file as the `file` part of a multipart body after the
    /// `targetDocument` part; returns the document as the server stored it, the property set to the
    /// file's URL. The file is read in chunks as the connection takes them.
    public func upload(_ upload: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject {
        let boundary = "docsync-" + (0..<24).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
        var target = JSONObject()
        target["targetId"] = .string(upload.targetID)
        target["targetDocType"] = .string(upload.targetDocType)
        target["targetProperty"] = .string(upload.targetProperty)
        let fileName = String(upload.fileName.map { "\"\\\r\n".contains($0) ? "_" : $0 })
        var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"targetDocument\"\r\nContent-Type: application/json\r\n\r\n"
        head += JSONWriter.string(.object(target))
        head += "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(fileName)\"\r\n"
        head += "Content-Type: application/octet-stream\r\n\r\n"
        let tail = "\r\n--\(boundary)--\r\n"
        let body = MultipartFileBody(
            head: ByteBuffer(string: head), tail: ByteBuffer(string: tail), path: upload.path, size: upload.size, progress: progress)
        let length = Int64(head.utf8.count) + upload.size + Int64(tail.utf8.count)
        // A deadline that grows with the file: 30 s plus one second per MiB.
        let timeout = requestTimeout + .seconds(upload.size >> 20)
        let reply = try await send(
            .POST, "/api/app/upload", body: .stream(body, length: .known(length)),
            contentType: "multipart/form-data; boundary=\(boundary)", timeout: timeout)
        guard case .object(let document)? = reply.json.object?["data"] else { throw .badReply("no document under \"data\"") }
        return document
    }
}

/// The multipart body of an upload: the head (the target part and the file part's headers), the
/// file's bytes read 256 KiB at a time, the closing boundary.
struct MultipartFileBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let head: ByteBuffer
    let tail: ByteBuffer
    let path: String
    let size: Int64
    let progress: UploadProgress

    func makeAsyncIterator() -> Iterator { Iterator(self) }

    final class Iterator: AsyncIteratorProtocol {
        private let body: MultipartFileBody
        private var stage = 0
        private var fd: Int32 = -1
        private var remaining: Int64
        static let chunkSize = 256 << 10

        init(_ body: MultipartFileBody) {
            self.body = body
            self.remaining = body.size
        }

        deinit { if fd >= 0 { close(fd) } }

        func next() async throws -> ByteBuffer? {
            switch stage {
            case 0:
                stage = 1
                fd = open(body.path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw FileReadError(path: body.path, reason: String(cString: strerror(errno))) }
                return body.head
            case 1 where remaining > 0:
                var buffer = ByteBufferAllocator().buffer(capacity: Int(Swift.min(Int64(Self.chunkSize), remaining)))
                let wanted = buffer.capacity
                let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { raw -> Int in
                    while true {
                        let n = read(fd, raw.baseAddress, wanted)
                        if n < 0 && errno == EINTR { continue }
                        return n
                    }
                }
                if n < 0 { throw FileReadError(path: body.path, reason: String(cString: strerror(errno))) }
                if n == 0 { throw FileReadError(path: body.path, reason: "the file became shorter while it was being sent") }
                remaining -= Int64(n)
                buffer.withUnsafeReadableBytes { body.progress.sent($0) }
                return buffer
            case 1:
                stage = 2
                close(fd)
                fd = -1
                return body.tail
            default:
                return nil
            }
        }
    }
}

struct FileReadError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "cannot read \(path): \(reason)" }
}
