import AsyncHTTPClient
import DocsyncEndpoint
import DocsyncHTTP
import Foundation

/// `syncrails+http://HOST[:PORT]/api/sync?resource=events` (or `syncrails+https`): the sync-ios
/// seed's dialect; the resource (default `events`) is the docType it carries.
public struct SyncRailsAdapter: HTTPAdapter {
    public let origin: String
    public let path: String
    public let resource: String

    public static let forms = "syncrails+http(s)://HOST[:PORT]/api/sync?resource=NAME"

    public static func choose(_ url: String) throws -> SyncRailsAdapter? {
        guard url.hasPrefix("syncrails+http://") || url.hasPrefix("syncrails+https://") else { return nil }
        guard let parts = URLComponents(string: String(url.dropFirst("syncrails+".count))), let scheme = parts.scheme, let host = parts.host
        else { throw EndpointURLError("--endpoint: cannot read the URL '\(url)'") }
        let resource = parts.queryItems?.first { $0.name == "resource" }?.value ?? "events"
        guard isPlainName(resource) else {
            throw EndpointURLError("--endpoint: the resource must be letters, digits, '_' or '-', got '\(resource)'")
        }
        // An IPv6 host comes with its brackets (`[::1]`); a bare one gets them.
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let origin = "\(scheme)://\(bracketed)" + (parts.port.map { ":\($0)" } ?? "")
        return SyncRailsAdapter(origin: origin, path: parts.path.isEmpty ? "/api/sync" : parts.path, resource: resource)
    }

    public func make(client: HTTPClient, context: EndpointContext) -> any DocumentEndpoint {
        SyncRailsEndpoint(transport: .of(origin, client: client, context: context), path: path, resource: resource, token: context.credential)
    }
}
