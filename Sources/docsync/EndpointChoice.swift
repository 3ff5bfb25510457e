import ArgumentParser
import AsyncHTTPClient
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncKinto
import DocsyncPingPong
import DocsyncSyncRails
import Foundation

/// The adapter an `--endpoint` URL selects — the one place that knows every adapter:
/// - `http://HOST[:PORT]` or `https://…`: the PingPong routes (the reference endpoint, with its batch call);
///   several comma-separated: servers of one store, tried in turn when one does not answer;
/// - `syncrails+http://HOST[:PORT]/api/sync?resource=events` (or `syncrails+https`): the sync-rails
///   dialect; the resource (default `events`) is the docType it carries;
/// - `kinto+http://HOST[:PORT]/v1/buckets/NAME` (or `kinto+https`): Kinto, one bucket for the folder.
enum EndpointChoice {
    case pingPong(bases: [String])
    case syncRails(origin: String, path: String, resource: String)
    case kinto(api: String, bucket: String)

    init(url: String) throws {
        if url.hasPrefix("http://") || url.hasPrefix("https://") {
            // Several servers of one store, comma-separated: the agent goes on with the next
            // when one does not answer.
            let bases = url.split(separator: ",").map(String.init)
            guard bases.allSatisfy({ $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
                throw ValidationError("--endpoint: every URL of a list is http:// or https://, got '\(url)'")
            }
            self = .pingPong(bases: bases)
            return
        }
        if url.hasPrefix("syncrails+http://") || url.hasPrefix("syncrails+https://") {
            guard let parts = URLComponents(string: String(url.dropFirst("syncrails+".count))), let scheme = parts.scheme, let host = parts.host
            else { throw ValidationError("--endpoint: cannot read the URL '\(url)'") }
            let resource = parts.queryItems?.first { $0.name == "resource" }?.value ?? "events"
            guard !resource.isEmpty, resource.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) else {
                throw ValidationError("--endpoint: the resource must be letters, digits, '_' or '-', got '\(resource)'")
            }
            let origin = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)" + (parts.port.map { ":\($0)" } ?? "")
            self = .syncRails(origin: origin, path: parts.path.isEmpty ? "/api/sync" : parts.path, resource: resource)
            return
        }
        if url.hasPrefix("kinto+http://") || url.hasPrefix("kinto+https://") {
            self = try Self.kinto(String(url.dropFirst("kinto+".count)))
            return
        }
        throw ValidationError("--endpoint must be an http://, https://, syncrails+http(s):// or kinto+http(s):// URL, got '\(url)'")
    }

    /// `http://HOST/v1/buckets/NAME` → the API root and the bucket.
    private static func kinto(_ url: String) throws -> EndpointChoice {
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let range = trimmed.range(of: "/buckets/", options: .backwards) else {
            throw ValidationError("--endpoint: a Kinto URL names its bucket: kinto+http://HOST:PORT/v1/buckets/NAME, got '\(url)'")
        }
        let bucket = String(trimmed[range.upperBound...])
        guard !bucket.isEmpty, bucket.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) else {
            throw ValidationError("--endpoint: the bucket must be letters, digits, '_' or '-', got '\(bucket)'")
        }
        return .kinto(api: String(trimmed[..<range.lowerBound]), bucket: bucket)
    }

    /// Makes the adapter for one folder.
    func factory(client: HTTPClient) -> @Sendable (EndpointContext) -> any DocumentEndpoint {
        switch self {
        case .pingPong(let bases):
            return { context in
                PingPongEndpoint(
                    transport: HTTPTransport(
                        baseURLs: bases, client: client, clock: context.clock, clientID: context.clientID, requestTimeout: context.requestTimeout),
                    token: context.credential, selection: context.selection, folderTypes: context.folderTypes)
            }
        case .syncRails(let origin, let path, let resource):
            return { context in
                SyncRailsEndpoint(transport: Self.transport(origin, client, context), path: path, resource: resource, token: context.credential)
            }
        case .kinto(let api, let bucket):
            return { context in
                KintoEndpoint(transport: Self.transport(api, client, context), bucket: bucket, credential: context.credential, selection: context.selection)
            }
        }
    }

    private static func transport(_ base: String, _ client: HTTPClient, _ context: EndpointContext) -> HTTPTransport {
        HTTPTransport(baseURL: base, client: client, clock: context.clock, clientID: context.clientID, requestTimeout: context.requestTimeout)
    }
}
