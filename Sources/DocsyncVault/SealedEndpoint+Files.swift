import Crypto
import DocsyncEndpoint
import DocsyncModel
import Foundation

/// Files of an encrypted folder: sealed in chunks before they are uploaded (``FileSeal``), under a
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
        return SealedForm.filePropertyPrefix + mac.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    public func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject {
        let temporary = (scratchDirectory ?? NSTemporaryDirectory()) + "/sealing-\(UUID().uuidString).tmp"
        defer { unlink(temporary) }
        do {
            try FileSeal(keys: seal.keys).seal(path: request.path, size: request.size, into: temporary) { progress.sent($0) }
        } catch {
            throw .localFile("sealing \(request.path): \(error)")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: temporary)[.size] as? Int64) ?? 0
        let property = opaque(request.targetProperty)
        let sealed = FileUploadRequest(
            path: temporary, size: size, fileName: Self.sealedName, targetID: request.targetID, targetDocType: request.targetDocType,
            targetProperty: property)
        let stored = try await inner.upload(sealed, progress: UploadProgress())
        guard let url = stored[property]?.string else { throw .badReply("the upload's reply names no URL for the sealed file") }
        guard var document = await open([stored]).opened.first else { throw .badReply("the upload's reply cannot be opened") }
        let ext = RemoteFile.safeExtension(of: Substring(request.fileName)).map { "#" + $0 } ?? "#"
        document[request.targetProperty] = .string(url + ext)
        return document
    }

    public func remoteFile(in property: String, of document: JSONObject) -> RemoteFileMatch? {
        guard case .string(let value)? = document[property], let hash = value.firstIndex(of: "#") else { return nil }
        var bare = document
        bare[property] = .string(String(value[..<hash]))
        switch inner.remoteFile(in: property, of: bare) {
        case .file?:
            // The hash the server names is the sealed bytes': the seal's own tags check what arrives.
            return .file(RemoteFile(url: value, sha256: nil, fileExtension: RemoteFile.safeExtension(of: "x." + value[value.index(after: hash)...])))
        case let other: return other
        }
    }

    public func download(
        _ file: RemoteFile, maxBytes: Int64, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError) {
        let url = String(file.url.prefix { $0 != "#" })
        var opener = FileSeal.Opener(seal: FileSeal(keys: seal.keys))
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
