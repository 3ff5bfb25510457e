import DocsyncStore
import Crypto
import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Uploaded files, content-addressed under `<data>/uploads/`: `<sha256[0..2]>/<sha256>`, so the same
/// bytes are stored once however many documents or uploads name them. An upload is written to
/// `uploads/tmp/` while it streams in and renamed into place once complete.
struct BlobDirectory: Sendable {
    let root: String
    var temporaryDirectory: String { root + "/tmp" }

    init(root: String) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root + "/tmp", withIntermediateDirectories: true)
        removeAbandoned()
    }

    /// Temporaries no upload has written to for an hour: cut short by a crash or a stop. Recent
    /// ones are left, since servers sharing the folder may be receiving them now.
    func removeAbandoned(olderThan seconds: Int = 3600) {
        let cutoff = time(nil) - seconds
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporaryDirectory)) ?? [] {
            var st = stat()
            let path = temporaryDirectory + "/" + name
            if lstat(path, &st) == 0, st.st_mtim.tv_sec < cutoff { unlink(path) }
        }
    }

    func path(of sha256: String) -> String { "\(root)/\(sha256.prefix(2))/\(sha256)" }

    /// Moves a completed upload into place, or drops it when these bytes are stored already.
    func adopt(temporary: String, sha256: String) throws {
        let destination = path(of: sha256)
        if access(destination, F_OK) == 0 {
            unlink(temporary)
            return
        }
        try FileManager.default.createDirectory(atPath: "\(root)/\(sha256.prefix(2))", withIntermediateDirectories: true)
        guard rename(temporary, destination) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw StoreError(.failed, "cannot store the upload: \(reason)")
        }
    }
}

/// `POST /api/app/upload` (the seed's FileUpload) and `GET /api/app/upload/{sha256}/{name}`.
///
/// The upload is `multipart/form-data` with a `file` part and a `targetDocument` part holding
/// `{"targetId", "targetDocType", "targetProperty"}`, in either order. The file streams to disk while
/// it is hashed (memory stays flat whatever its size); then it is moved to its content address and
/// the target document's property is set to the file's URL in one transaction. The reply is
/// `{"data": <the updated document>}`.
struct UploadRoutes: Sendable {
    let store: any DocumentStore
    let blobs: BlobDirectory
    let feed: ChangeFeed
    let maxUploadBytes: Int64
    let publicURL: String?
    let listening: ListeningAddress
    let pace: ConnectionLimits
    let now: @Sendable () -> Int64
    /// An encrypted folder's server takes only sealed files.
    let vault: VaultGuard

    func add(to router: Router<ServerRequestContext>) {
        router.post("/api/app/upload") { request, context in
            do {
                return try await receive(request, context: context)
            } catch {
                return ReferenceServer.errorResponse(error)
            }
        }
        router.get("/api/app/upload/{sha256}/{name}") { _, context in try await download(context) }
        router.get("/api/app/upload/{sha256}") { _, context in try await download(context) }
    }

    // MARK: - Receiving

    func receive(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let contentType = request.headers[.contentType], let boundary = Self.boundary(contentType) else {
            throw HTTPRefusal(415, "an upload is multipart/form-data with a boundary")
        }
        if let length = request.headers[.contentLength].flatMap({ Int64($0) }), length > maxUploadBytes + 65536 {
            throw HTTPRefusal(413, "the upload is larger than the limit of \(maxUploadBytes) bytes")
        }
        let parts = try UploadParts(temporaryDirectory: blobs.temporaryDirectory, maxFileBytes: maxUploadBytes)
        defer { parts.discard() }
        var stream = MultipartStream(boundary: boundary)
        var paced = ConnectionLimits.BodyPace(limits: pace)
        for try await chunk in request.body {
            try paced.add(chunk.readableBytes)
            do {
                try chunk.withUnsafeReadableBytes { raw in
                    try stream.feed(raw) { event in
                        switch event {
                        case .headers(let headers): parts.begin(headers)
                        case .body(let bytes): parts.body(bytes)
                        case .partEnd: parts.complete()
                        }
                    }
                }
            } catch {
                throw HTTPRefusal(400, "the upload is not valid multipart/form-data")
            }
            if let problem = parts.problem { throw problem }
        }
        guard stream.isComplete else { throw HTTPRefusal(400, "the upload ended before its closing boundary") }
        guard let file = parts.file else { throw HTTPRefusal(400, "the upload has no complete \"file\" part") }
        guard let targetBytes = parts.target else { throw HTTPRefusal(400, "the upload has no \"targetDocument\" part") }
        let target = try Self.target(targetBytes)
        // Refused before the file is kept (the store checks again against the stored document).
        if !context.access.mayWrite(target.docType) {
            throw StoreError(.forbidden, "this token may not change documents of docType \(target.docType)", right: "write:\(target.docType)")
        }
        try await vault.checkUpload(property: target.property)
        try blobs.adopt(temporary: file.temporaryPath, sha256: file.sha256)
        parts.adopted()
        let name = Self.sanitisedFileName(file.fileName)
        let url = "\(baseURL)/api/app/upload/\(file.sha256)/\(name)"
        let blob = StoredBlob(sha256: file.sha256, size: file.size, contentType: Self.mediaType(declared: file.contentType, fileName: name))
        let stored = try await store.attach(
            blob: blob, to: target.id, docType: target.docType, property: target.property, url: url, now: now(),
            client: ReferenceServer.client(request, token: context.author), author: context.author, access: context.access)
        feed.published(try await store.latestSeq())
        context.logger.info("stored upload", metadata: ["doc.id": "\(target.id)", "property": "\(target.property)", "bytes": "\(file.size)"])
        var buffer = ByteBuffer(string: "{\"data\":")
        buffer.writeBytes(JSONWriter.bytes(.object(stored)))
        buffer.writeString("}")
        return ReferenceServer.response(.ok, buffer)
    }

    /// The base of the URLs documents will hold: `--public-url`, else the address the server
    /// listens on. Never the request's `Host` header: a client could make every other client's
    /// copy of the document point at a server of its choosing (`Host: attacker.example`).
    var baseURL: String { publicURL ?? listening.url }

    struct Target {
        var id: String
        var docType: String
        var property: String
    }

    static func target(_ bytes: [UInt8]) throws -> Target {
        guard case .object(let o)? = try? JSONParser.parse(bytes) else {
            throw HTTPRefusal(400, "\"targetDocument\" must be a JSON object {\"targetId\", \"targetDocType\", \"targetProperty\"}")
        }
        guard let id = o["targetId"]?.string, DocumentRules.isSafeIdentifier(id) else {
            throw HTTPRefusal(400, "\"targetId\" must be a document id")
        }
        guard let docType = o["targetDocType"]?.string else { throw HTTPRefusal(400, "\"targetDocType\" must be a string") }
        guard let property = o["targetProperty"]?.string, !property.isEmpty, property.utf8.count <= 256,
              !["id", "docType"].contains(property), !DocumentRules.reservedKeys.contains(property)
        else {
            throw HTTPRefusal(400, "\"targetProperty\" must name an ordinary property of the document")
        }
        return Target(id: id, docType: docType, property: property)
    }

    static func boundary(_ contentType: String) -> String? {
        let fields = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.first?.lowercased() == "multipart/form-data" else { return nil }
        for field in fields.dropFirst() {
            let pair = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty || value.utf8.count > 200 ? nil : value
        }
        return nil
    }

    /// A name safe in a URL path segment and a download header: the last path component of what the
    /// client sent, letters, digits, `.`, `_` and `-` only, no leading dot, at most 100 characters.
    static func sanitisedFileName(_ raw: String?) -> String {
        let last = (raw ?? "").split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var out = ""
        for scalar in last.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-".unicodeScalars.contains(scalar) {
                out.unicodeScalars.append(scalar)
            } else if !out.hasSuffix("_") {
                out += "_"
            }
        }
        while out.hasPrefix(".") { out.removeFirst() }
        if out.count > 100 { out = String(out.suffix(100)) }
        return out.isEmpty || out == "_" ? "file" : out
    }

    /// The part's declared type when it is a plain `type/subtype`, else one guessed from the name.
    static func mediaType(declared: String?, fileName: String) -> String {
        if let declared = declared?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased(),
           declared != "application/octet-stream", declared.split(separator: "/").count == 2,
           declared.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C })
        {
            return declared
        }
        let ext = fileName.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return knownTypes[ext] ?? "application/octet-stream"
    }

    static let knownTypes: [String: String] = [
        "pdf": "application/pdf", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "svg": "image/svg+xml", "txt": "text/plain", "csv": "text/csv", "json": "application/json",
        "zip": "application/zip", "mp4": "video/mp4", "mp3": "audio/mpeg", "heic": "image/heic", "tif": "image/tiff",
        "tiff": "image/tiff", "xml": "application/xml", "html": "text/html",
    ]

    // MARK: - Serving

    func download(_ context: ServerRequestContext) async throws -> Response {
        let sha = context.parameters.get("sha256") ?? ""
        guard sha.utf8.count == 64, sha.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
              let blob = try await store.blob(sha256: sha),
              // A file of documents the token may not read is, to it, not there.
              blob.isReadable(by: context.access)
        else {
            return ReferenceServer.errorResponse(HTTPRefusal(404, "no such upload"))
        }
        let body = try await FileIO().loadFile(path: blobs.path(of: sha), context: context)
        var headers: HTTPFields = [.contentType: blob.contentType, .contentLength: String(blob.size)]
        if let name = context.parameters.get("name") {
            headers[.contentDisposition] = "inline; filename=\"\(Self.sanitisedFileName(ReferenceServer.percentDecoded(name)))\""
        }
        return Response(status: .ok, headers: headers, body: body)
    }
}

/// The parts of one upload as ``MultipartStream`` delivers them: the `file` part goes straight to
/// a temporary file (hashed on the way), `targetDocument` is kept in memory (at most 64 KiB), other
/// parts are skipped. Used by one request only, from one task.
final class UploadParts {
    struct File {
        var temporaryPath: String
        var size: Int64
        var sha256: String
        var fileName: String?
        var contentType: String?
    }

    private let temporaryDirectory: String
    private let maxFileBytes: Int64
    private(set) var problem: (any Error)?
    private(set) var file: File?
    private(set) var target: [UInt8]?

    private var headers: [String: String] = [:]
    private var current: Current = .none
    private var fd: Int32 = -1
    private var temporaryPath: String?
    private var hasher = SHA256()
    private var written: Int64 = 0
    private var collected: [UInt8] = []
    private var pending: [UInt8] = []
    private var keepFile = false

    private enum Current { case none, file, target, other }

    init(temporaryDirectory: String, maxFileBytes: Int64) throws {
        self.temporaryDirectory = temporaryDirectory
        self.maxFileBytes = maxFileBytes
    }

    func begin(_ partHeaders: [String: String]) {
        headers = partHeaders
        begin()
    }

    func body(_ raw: UnsafeRawBufferPointer) {
        guard problem == nil else { return }
        switch current {
        case .file:
            written += Int64(raw.count)
            if written > maxFileBytes {
                problem = HTTPRefusal(413, "the file is larger than the limit of \(maxFileBytes) bytes")
                return
            }
            hasher.update(bufferPointer: raw)
            pending.append(contentsOf: raw)
            // Written a megabyte at a time.
            if pending.count >= 1 << 20 { flush() }
        case .target:
            collected += raw
            if collected.count > 65536 { problem = HTTPRefusal(400, "\"targetDocument\" is larger than 64 KiB") }
        case .other, .none:
            break
        }
    }

    func complete() {
        switch current {
        case .file where problem == nil:
            flush()
            if problem == nil, fsync(fd) != 0 { problem = StoreError(.full, "cannot store the upload: \(String(cString: strerror(errno)))") }
            close(fd)
            fd = -1
            file = File(
                temporaryPath: temporaryPath!, size: written, sha256: ContentHash.hex(hasher.finalize()),
                fileName: disposition().filename, contentType: headers["content-type"])
        case .target:
            target = collected
        default:
            break
        }
        headers = [:]
        current = .none
    }

    private func flush() {
        defer { pending.removeAll(keepingCapacity: true) }
        pending.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    problem = StoreError(.full, "cannot store the upload: \(String(cString: strerror(errno)))")
                    return
                }
                offset += n
            }
        }
    }

    /// The part's `name` and `filename` from its Content-Disposition.
    private func disposition() -> (filename: String?, name: String?) {
        guard let value = headers["content-disposition"] else { return (nil, nil) }
        var name: String?
        var filename: String?
        for field in value.split(separator: ";").dropFirst() {
            let pair = field.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            var v = pair[1]
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            switch pair[0].lowercased() {
            case "name": name = v
            case "filename": filename = v
            default: break
            }
        }
        return (filename, name)
    }

    private func begin() {
        switch disposition().name {
        case "file" where file == nil:
            let path = temporaryDirectory + "/" + UUID().uuidString
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                problem = StoreError(.full, "cannot store the upload: \(String(cString: strerror(errno)))")
                current = .other
                return
            }
            temporaryPath = path
            pending.reserveCapacity(1 << 20)
            hasher = SHA256()
            written = 0
            current = .file
        case "targetDocument" where target == nil:
            collected = []
            current = .target
        default:
            current = .other
        }
    }

    /// The temporary file now lives at its content address.
    func adopted() { keepFile = true }

    /// Closes and removes what an unfinished or refused upload left.
    func discard() {
        if fd >= 0 { close(fd) }
        fd = -1
        if !keepFile, let temporaryPath { unlink(temporaryPath) }
    }
}
