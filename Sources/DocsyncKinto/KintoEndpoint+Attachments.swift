import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import NIOCore

/// Files through Kinto's attachment plugin (kinto-attachment): the file goes to
/// `POST …/records/ID/attachment` as the `attachment` part, the plugin stores it and writes its
/// metadata (`location`, `hash`, `size`, …) into the record's `attachment` member; the document's
/// property then gets the file's URL (one PATCH of that member alone). The plugin keeps one file a
/// record, so the adapter declares one file per document; the engine reports any further
/// reference. The `attachment` member comes back with the record and is kept in the file: a
/// later write sends it unchanged, which is what the plugin asks (it refuses a changed one).
extension KintoEndpoint {
    struct Attachments: Sendable {
        var available: Bool
        /// Where the plugin's files are served; its `location`s are relative to it when not absolute.
        var baseURL: String?
    }

    /// The member the plugin owns.
    static let attachmentMember = "attachment"

    public func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject {
        let (docType, id, property) = (request.targetDocType, request.targetID, request.targetProperty)
        guard KintoForm.isKintoID(docType), KintoForm.isKintoID(id) else {
            throw .rejected("Kinto names collections and records with letters, digits, '_' and '-' only")
        }
        guard property != Self.attachmentMember else {
            throw .rejected("\"\(property)\" is the attachment plugin's own member; give the file another property")
        }
        if readAttachments() == nil { try await hello() }
        guard let plugin = readAttachments(), plugin.available else {
            throw .unsupported("\(location) has no attachment plugin (kinto-attachment); files are not sent")
        }
        let record = "\(bucketPath)/collections/\(docType)/records/\(id)"
        let multipart = MultipartUpload(fields: [], fileField: Self.attachmentMember, upload: request, progress: progress)
        let reply = try await call(
            .POST, record + "/attachment", body: multipart.body, contentType: multipart.contentType,
            timeout: http.requestTimeout + multipart.extraTime, failover: false)
        // The record is not there yet (its own write is still on the way): later.
        if reply.status == 404 { throw .unavailable("404: \(reply.message)", retryAfter: nil) }
        guard reply.ok else { throw .rejected("\(reply.status): \(reply.message)") }
        guard let stored = reply.json.object?["location"]?.string, !stored.isEmpty else { throw .badReply("no \"location\" in the attachment reply") }
        // The plugin hashes what it stored: other bytes than were sent are not taken as the file
        // (a sealed file's bytes are not hashed here: its seal checks them when they come back).
        if progress.hashing, let hash = reply.json.object?["hash"]?.string, hash != progress.sha256() {
            throw .badReply("the server stored other bytes than were sent (SHA-256 \(hash.prefix(64)))")
        }
        let url = Self.absolute(stored, base: plugin.baseURL)
        let patch = JSONWriter.string(.object(JSONObject([(key: "data", value: .object(JSONObject([(key: property, value: .string(url))])))])))
        let patched = try await call(.PATCH, record, body: .bytes(ByteBuffer(string: patch)))
        guard patched.ok, let data = patched.json.object?["data"]?.object else { throw Self.refusal(patched) }
        return KintoForm.document(data, collection: docType)
    }

    /// A property holding the URL of the record's own attachment (`attachment.location` joined to
    /// the plugin's `base_url`) names a file to download, checked against the plugin's `hash`.
    /// Files are served by whatever publishes the plugin's storage, not by Kinto: they are fetched
    /// without Kinto's credential, and only from under `base_url`.
    public func remoteFiles(in document: JSONObject) -> [RemoteFileFound] {
        guard let meta = document[Self.attachmentMember]?.object, let location = meta["location"]?.string, let plugin = readAttachments() else { return [] }
        let url = Self.absolute(location, base: plugin.baseURL)
        return document.members.compactMap { member in
            guard member.key != Self.attachmentMember, member.value == .string(url) else { return nil }
            return RemoteFileFound(property: member.key, match: Self.match(url, meta: meta, plugin: plugin))
        }
    }

    /// What the record's attachment at `url` is: a file to fetch, or why it is not fetched.
    static func match(_ url: String, meta: JSONObject, plugin: Attachments) -> RemoteFileMatch {
        guard let base = plugin.baseURL, !base.isEmpty, url.hasPrefix(base.hasSuffix("/") ? base : base + "/"), !url.contains("/../") else {
            return .refused(url: url, reason: "it is not under the attachment plugin's base_url; only the endpoint's own files are fetched")
        }
        guard let hash = meta["hash"]?.string, RemoteFile.isSHA256(hash) else {
            return .refused(url: url, reason: "the record's attachment names no SHA-256 to check the file against")
        }
        let size = meta["size"].flatMap { if case .number(let n) = $0 { Int64(n) } else { nil } }
        let ext = meta["filename"]?.string.flatMap { RemoteFile.safeExtension(of: Substring($0)) }
        return .file(RemoteFile(url: url, sha256: hash, size: size, fileExtension: ext))
    }

    public func download(
        _ file: RemoteFile, maxBytes: Int64, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError) {
        try await http.download(url: file.url, maxBytes: maxBytes, credentials: false, progress: progress, into: sink)
    }

    /// `location` joined to the plugin's `base_url` unless it is a URL already.
    static func absolute(_ location: String, base: String?) -> String {
        if location.hasPrefix("http://") || location.hasPrefix("https://") { return location }
        guard let base, !base.isEmpty else { return location }
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/" + (location.hasPrefix("/") ? String(location.dropFirst()) : location)
    }
}
