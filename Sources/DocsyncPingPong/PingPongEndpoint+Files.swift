import DocsyncEndpoint
import DocsyncModel

/// Files others attached: the reference endpoint stores uploads by content and serves them at
/// `<server>/api/app/upload/<sha256>/<name>`, so the URL itself names the hash the bytes must
/// have. Only URLs of this endpoint's own servers are fetched (with the token, which must not go
/// anywhere else); an upload URL of another server is reported, not followed.
extension PingPongEndpoint {
    static let uploadPath = "/api/app/upload/"

    public func remoteFiles(in document: JSONObject) -> [RemoteFileFound] {
        document.members.compactMap { member in
            guard case .string(let url) = member.value, let match = remoteFile(url) else { return nil }
            return RemoteFileFound(property: member.key, match: match)
        }
    }

    /// Whether a string value is one of this endpoint's upload URLs, another server's, or neither.
    func remoteFile(_ url: String) -> RemoteFileMatch? {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"),
              url.utf8.count <= 2048, let marker = url.range(of: Self.uploadPath)
        else { return nil }
        for base in http.baseURLs where url.hasPrefix(base + Self.uploadPath) {
            return Self.parseUploadTail(url.dropFirst(base.count + Self.uploadPath.count), url: url).map { .file($0) }
        }
        guard Self.parseUploadTail(url[marker.upperBound...], url: url) != nil else { return nil }
        return .refused(url: url, reason: "it is served by another server than the endpoint (\(location)); only the endpoint's own files are fetched")
    }

    /// `<sha256>` or `<sha256>/<name>` (the name as the server sanitises it), nothing else.
    static func parseUploadTail(_ tail: Substring, url: String) -> RemoteFile? {
        let parts = tail.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), RemoteFile.isSHA256(parts[0]) else { return nil }
        var ext: String?
        if parts.count == 2 {
            let name = parts[1]
            guard (1...100).contains(name.utf8.count), !name.hasPrefix("."),
                  name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D })
            else { return nil }
            ext = RemoteFile.safeExtension(of: name)
        }
        return RemoteFile(url: url, sha256: String(parts[0]), fileExtension: ext)
    }

    public func download(
        _ file: RemoteFile, maxBytes: Int64, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError) {
        try await http.download(url: file.url, maxBytes: maxBytes, progress: progress, into: sink)
    }
}
