import AsyncHTTPClient
import DocsyncEndpoint

/// An HTTP endpoint adapter as the command line chooses it: by the scheme of an `--endpoint`
/// URL. Each adapter target declares its own (its URL grammar stays with its routes); the CLI
/// holds the list and asks each in turn. A new adapter adds a type here and a line to that list.
public protocol HTTPAdapter: Sendable {
    /// The URL forms it takes, for the error that lists them (`kinto+http(s)://HOST/v1/buckets/NAME`).
    static var forms: String { get }

    /// The adapter for `url`: `nil` when the URL is not of its scheme, an error (said to the
    /// user as it is) when it is but cannot be read.
    static func choose(_ url: String) throws -> Self?

    /// Makes the adapter for one folder.
    func make(client: HTTPClient, context: EndpointContext) -> any DocumentEndpoint
}

/// An `--endpoint` URL of an adapter's scheme that it cannot read, and why.
public struct EndpointURLError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension HTTPAdapter {
    /// Whether `s` is a plain name for a URL's part (a bucket, a resource): ASCII letters,
    /// digits, `_` and `-`, not empty.
    public static func isPlainName(_ s: String) -> Bool {
        !s.isEmpty && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    }
}

extension HTTPTransport {
    /// The transport an adapter made from a context talks through.
    public static func of(_ base: String, client: HTTPClient, context: EndpointContext) -> HTTPTransport {
        HTTPTransport(baseURL: base, client: client, clock: context.clock, clientID: context.clientID, requestTimeout: context.requestTimeout)
    }
}
