import AsyncHTTPClient
import DocsyncEndpoint
import DocsyncHTTP

/// `http://HOST[:PORT]` or `https://…`: the PingPong routes (the reference endpoint, with its
/// batch call); several comma-separated: servers of one store, tried in turn when one does not
/// answer.
public struct PingPongAdapter: HTTPAdapter {
    public let bases: [String]

    public init(bases: [String]) { self.bases = bases }

    public static let forms = "http(s)://HOST[:PORT] (several, comma-separated)"

    public static func choose(_ url: String) throws -> PingPongAdapter? {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { return nil }
        let bases = url.split(separator: ",").map(String.init)
        guard bases.allSatisfy({ $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            throw EndpointURLError("--endpoint: every URL of a list is http:// or https://, got '\(url)'")
        }
        return PingPongAdapter(bases: bases)
    }

    public func make(client: HTTPClient, context: EndpointContext) -> any DocumentEndpoint {
        PingPongEndpoint(
            transport: HTTPTransport(baseURLs: bases, client: client, clock: context.clock, clientID: context.clientID, requestTimeout: context.requestTimeout),
            token: context.credential, selection: context.selection, folderTypes: context.folderTypes, longPollPage: context.longPollPage)
    }
}
