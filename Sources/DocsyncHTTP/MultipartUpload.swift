import AsyncHTTPClient
import DocsyncEndpoint
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// A `multipart/form-data` body carrying JSON fields and then one file, streamed from disk (and
/// encoded on the way when the request says so).
public struct MultipartUpload: Sendable {
    public let body: HTTPClientRequest.Body
    public let contentType: String
    /// The file's share of the request's deadline: one second per MiB.
    public let extraTime: TimeAmount

    /// `fields` are sent first (`name`, JSON text), then the file as part `fileField`.
    public init(fields: [(name: String, json: String)], fileField: String, upload: FileUploadRequest, progress: UploadProgress) {
        let boundary = "docsync-" + (0..<24).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
        let fileName = String(upload.fileName.map { "\"\\\r\n".contains($0) ? "_" : $0 })
        var head = ""
        for field in fields {
            head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(field.name)\"\r\nContent-Type: application/json\r\n\r\n"
            head += field.json + "\r\n"
        }
        head += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(fileField)\"; filename=\"\(fileName)\"\r\n"
        head += "Content-Type: application/octet-stream\r\n\r\n"
        let tail = "\r\n--\(boundary)--\r\n"
        let stream = MultipartFileBody(
            head: ByteBuffer(string: head), tail: ByteBuffer(string: tail), path: upload.path, size: upload.size,
            encoding: upload.encoding, progress: progress)
        let fileLength = upload.encoding?.encodedSize(of: upload.size) ?? upload.size
        let length = Int64(head.utf8.count) + fileLength + Int64(tail.utf8.count)
        self.body = .stream(stream, length: .known(length))
        self.contentType = "multipart/form-data; boundary=\(boundary)"
        self.extraTime = .seconds(upload.size >> 20)
    }
}

/// The multipart body of an upload: the head (the target part and the file part's headers), the
/// file's bytes read 256 KiB at a time (encoded as they are read, if asked), the closing boundary.
/// `progress` is told of the bytes as they are sent (the encoded ones, when encoded).
struct MultipartFileBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let head: ByteBuffer
    let tail: ByteBuffer
    let path: String
    let size: Int64
    let encoding: (any UploadEncoding)?
    let progress: UploadProgress

    func makeAsyncIterator() -> Iterator { Iterator(self) }

    final class Iterator: AsyncIteratorProtocol {
        private let body: MultipartFileBody
        private var stage = 0
        private var fd: Int32 = -1
        private var remaining: Int64
        private var encoder: (any UploadEncoder)?
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
                encoder = body.encoding?.encoder(size: body.size)
                return body.head
            case 1 where remaining > 0:
                let buffer = try readPiece()
                guard let encoder else {
                    buffer.withUnsafeReadableBytes { body.progress.sent($0) }
                    return buffer
                }
                return try encoded { out in try buffer.withUnsafeReadableBytes { try encoder.encode($0, into: &out) } }
            case 1:
                stage = 2
                close(fd)
                fd = -1
                // What the encoding still holds (all of it, for an empty file) goes before the tail.
                guard let encoder else { return body.tail }
                var last = try encoded { try encoder.finish(into: &$0) }
                last.writeImmutableBuffer(body.tail)
                return last
            default:
                return nil
            }
        }

        /// The next piece of the file.
        private func readPiece() throws -> ByteBuffer {
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
            return buffer
        }

        /// What the encoder makes, as one buffer, counted as sent; its errors name the file.
        private func encoded(_ make: (inout [UInt8]) throws -> Void) throws -> ByteBuffer {
            var out: [UInt8] = []
            out.reserveCapacity(Self.chunkSize + 4096)
            do {
                try make(&out)
            } catch let error as FileReadError {
                throw error
            } catch {
                throw FileReadError(path: body.path, reason: "\(error)")
            }
            out.withUnsafeBytes { body.progress.sent($0) }
            return ByteBuffer(bytes: out)
        }
    }
}

struct FileReadError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "cannot read \(path): \(reason)" }
}
