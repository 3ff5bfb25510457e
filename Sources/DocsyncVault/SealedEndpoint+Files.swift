import Crypto
import DocsyncEndpoint
import DocsyncModel
import Foundation

/// Files of an encrypted folder: sealed in chunks as they are uploaded (``FileSeal``), under a
/// name that says nothing of them (`sealed`), into a property whose name says nothing either (the
/// server sets it in clear beside the sealed content; the next sealed write replaces it); opened as
/// they stream in. The file's extension travels inside the sealed document, in the URL's fragment,
/// which the server never sees.
extension SealedEndpoint {
    static let sealedName = "sealed"

    /// The property the server is told to set: derived from the real one with a key of the folder.
    func opaque(_ property: String) -> String {
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: seal.keys.dataKey, info: Data("docsync-property-v1".utf8), outputByteCount: 32)
        let mac = HMAC<SHA256>.authenticationCode(for: Data(property.utf8), using: key)
        return SealedForm.filePropertyPrefix + Hex.encode(mac.prefix(8))
    }

    public func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject {
        // Sealed while it is sent: no sealed copy of the file is written anywhere. The agent's
        // progress counts and hashes the file's own bytes; the adapter's counts the sealed ones it
        // sent, unhashed (the seal's tags check them when they come back).
        let sealing = FileSeal.Upload(seal: FileSeal(keys: seal.keys), plain: progress)
        let property = opaque(request.targetProperty)
        var sealed = request
        sealed.fileName = Self.sealedName
        sealed.targetProperty = property
        sealed.encoding = sealing
        let stored = try await inner.upload(sealed, progress: UploadProgress(hashing: false))
        guard let fileID = sealing.fileID else { throw .badReply("the upload was answered before its file was sent") }
        guard let url = stored[property]?.string else { throw .badReply("the upload's reply names no URL for the sealed file") }
        guard var document = await open([stored]).opened.first else { throw .badReply("the upload's reply cannot be opened") }
        let fragment = Fragment(fileID: fileID, fileExtension: RemoteFile.safeExtension(of: Substring(request.fileName)))
        document[request.targetProperty] = .string(url + "#" + fragment.text)
        return try await storeSealed(document, over: stored)
    }

    /// The server set the file's URL beside the seal, where no other agent reads it: the document
    /// goes again with the URL sealed inside, over the revision the upload made. A document
    /// changed meanwhile makes the upload fail, to be tried again (the file is stored once).
    private func storeSealed(_ document: JSONObject, over stored: JSONObject) async throws(EndpointError) -> JSONObject {
        guard let id = document["id"]?.string, let docType = document["docType"]?.string else { throw .badReply("the upload's reply names no document") }
        let rev = DocumentRules.revision(of: stored)
        let body = JSONObject(document.members.filter { !DocumentRules.reservedKeys.contains($0.key) })
        let reply = try await push([OutgoingChange(id: id, docType: docType, body: JSONWriter.string(.object(body)), baseRevision: rev)], pullingAfter: nil)
        switch reply.outcomes[id] {
        case .storedAsSent(let revision)?:
            var result = document
            result[DocumentRules.revKey] = revision.map { .number(String($0)) } ?? document[DocumentRules.revKey]
            return result
        case .stored(let current)?: return current
        case .failed(let error)?: throw .unavailable("the document changed while its file was sent (\(error)); the file goes again", retryAfter: nil)
        case nil: throw .badReply("no outcome for document \(id)")
        }
    }

    /// The inner endpoint is asked of the document with each sealed file's URL bare (its fragment,
    /// which the server never saw, cut off); only URLs that carry a fragment are files here.
    public func remoteFiles(in document: JSONObject) -> [RemoteFileFound] {
        var sealed: [String: (url: String, fragment: Fragment)] = [:]
        let bare = document.members.map { member -> (key: String, value: JSONValue) in
            // The `#` is looked for in the UTF-8 bytes (by Character, each long text member cost a
            // grapheme walk).
            guard case .string(let value) = member.value, let hash = value.utf8.firstIndex(of: UInt8(ascii: "#")),
                  let fragment = Fragment(value[value.index(after: hash)...])
            else { return member }
            sealed[member.key] = (value, fragment)
            return (member.key, .string(String(value[..<hash])))
        }
        guard !sealed.isEmpty else { return [] }
        return inner.remoteFiles(in: JSONObject(bare)).compactMap { found in
            guard let (url, fragment) = sealed[found.property] else { return nil }
            // The hash the server names is the sealed bytes': the seal's own tags check what
            // arrives, and the file id in the (sealed) fragment that it is this document's file.
            guard case .file = found.match else { return found }
            return RemoteFileFound(property: found.property, match: .file(RemoteFile(url: url, sha256: nil, fileExtension: fragment.fileExtension)))
        }
    }

    /// What the URL's fragment carries, inside the sealed document: the sealed file's id and the
    /// real file's extension (`f=<64 hex>&x=<ext>`). The server never sees a fragment.
    struct Fragment {
        var fileID: String
        var fileExtension: String?

        init(fileID: String, fileExtension: String?) {
            self.fileID = fileID
            self.fileExtension = fileExtension
        }

        init?(_ text: Substring) {
            var fields: [Substring: Substring] = [:]
            for pair in text.split(separator: "&") {
                guard let equals = pair.firstIndex(of: "=") else { return nil }
                fields[pair[..<equals]] = pair[pair.index(after: equals)...]
            }
            guard let id = fields["f"], id.count == 64, id.allSatisfy(\.isHexDigit) else { return nil }
            fileID = String(id).lowercased()
            fileExtension = fields["x"].flatMap { RemoteFile.safeExtension(of: "x." + $0) }
        }

        var text: String { "f=\(fileID)" + (fileExtension.map { "&x=" + $0 } ?? "") }
    }

    public func download(
        _ file: RemoteFile, maxBytes: Int64, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError) {
        let url = String(file.url.prefix { $0 != "#" })
        guard let hash = file.url.firstIndex(of: "#"), let fragment = Fragment(file.url[file.url.index(after: hash)...]) else {
            throw .rejected("the file's URL names no sealed file")
        }
        var opener = FileSeal.Opener(seal: FileSeal(keys: seal.keys), expected: fragment.fileID)
        // A sealed file is its plain size plus a header and 16 bytes a chunk.
        let limit = maxBytes + Int64(FileSeal.headerSize) + 16 * (maxBytes / Int64(FileSeal.chunk) + 1)
        do {
            try await inner.download(RemoteFile(url: url, sha256: nil), maxBytes: limit, progress: progress) { bytes in
                do {
                    try opener.feed(bytes, sink)
                } catch let error as SealError {
                    throw EndpointError.rejected("the file cannot be opened: \(error)")
                }
            }
            try opener.finish(sink)
        } catch let error as SealError {
            throw .rejected("the file cannot be opened: \(error)")
        } catch let error as EndpointError {
            throw error
        } catch {
            throw .localFile("\(error)")
        }
    }
}
