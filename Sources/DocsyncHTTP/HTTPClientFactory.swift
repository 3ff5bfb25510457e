import AsyncHTTPClient
import DocsyncEndpoint
import DocsyncModel
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// The HTTP client every docsync command uses against an endpoint.
///
/// A refused or failed connect is reported to the caller at once instead of being retried inside
/// the connection pool until the connect timeout: the agent has its own retry policy (with
/// backoff and logging), and an agent started offline must not sit for seconds before scanning.
///
/// `caFile`: PEM certificates trusted for `https://` endpoints instead of the system's.
/// `folders`: how many folders share the client; each may hold a long poll, a push, an upload and
/// a download to the same server at once.
/// `requestTimeout`: the longest request timeout among those folders. A reply may be silent that
/// long before its first byte (a large batch the server is still storing): the client's own read
/// timeout, 60 s, is stretched to it, or a user's `--request-timeout 120` would end every such
/// request at 60 s and send it again.
public func makeHTTPClient(caFile: String? = nil, folders: Int = 1, requestTimeout: Duration = .zero) throws -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    if let caFile {
        guard access(caFile, R_OK) == 0 else { throw EndpointError.localFile("cannot read the CA file \(caFile)") }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caFile)
        configuration.tlsConfiguration = tls
    }
    let read = max(Duration.seconds(60), requestTimeout)
    configuration.timeout = .init(connect: .seconds(5), read: .nanoseconds(read.wholeNanoseconds))
    var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(16, 4 * folders))
    pool.retryConnectionEstablishment = false
    configuration.connectionPool = pool
    configuration.decompression = .disabled
    // No redirect is followed: a reply is the server's own, and a file is fetched from the server
    // its URL names (a 3xx to another host or port would otherwise be fetched with no check).
    configuration.redirectConfiguration = .disallow
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}
