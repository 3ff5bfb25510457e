import AsyncHTTPClient
import DocsyncEndpoint
import DocsyncHTTP

/// `kinto+http://HOST[:PORT]/v1/buckets/NAME` (or `kinto+https`): Kinto, one bucket for the folder.
public struct KintoAdapter: HTTPAdapter {
    public let api: String
    public let bucket: String

    public static let forms = "kinto+http(s)://HOST[:PORT]/v1/buckets/NAME"

    public static func choose(_ url: String) throws -> KintoAdapter? {
        guard url.hasPrefix("kinto+http://") || url.hasPrefix("kinto+https://") else { return nil }
        var trimmed = String(url.dropFirst("kinto+".count))
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let range = trimmed.range(of: "/buckets/", options: .backwards) else {
            throw EndpointURLError("--endpoint: a Kinto URL names its bucket: kinto+http://HOST:PORT/v1/buckets/NAME, got '\(url)'")
        }
        let bucket = String(trimmed[range.upperBound...])
        guard isPlainName(bucket) else {
            throw EndpointURLError("--endpoint: the bucket must be letters, digits, '_' or '-', got '\(bucket)'")
        }
        return KintoAdapter(api: String(trimmed[..<range.lowerBound]), bucket: bucket)
    }

    public func make(client: HTTPClient, context: EndpointContext) -> any DocumentEndpoint {
        KintoEndpoint(transport: .of(api, client: client, context: context), bucket: bucket, credential: context.credential, selection: context.selection)
    }
}
