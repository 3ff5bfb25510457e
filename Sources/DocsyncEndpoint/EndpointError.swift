import DocsyncModel

/// How a request to the endpoint failed, sorted by what the agent should do about it.
public enum EndpointError: Error, Sendable, CustomStringConvertible {
    /// No answer: connection refused or reset, timeout, name not resolved. Retry later.
    case unreachable(String)
    /// 5xx or 429: the endpoint is there but cannot take the write now. Retry later, no sooner
    /// than `retryAfter` when the server said so.
    case unavailable(status: Int, message: String, retryAfter: Duration?)
    /// 401/403: the token is wrong. Retrying would only hammer the server; pause pushing.
    case unauthorized(status: Int, message: String)
    /// Another 4xx: the server refuses this document. Retrying unchanged content cannot help.
    case rejected(status: Int, message: String)
    /// 409: the write was based on a revision that is no longer current.
    case conflict(current: JSONValue?)
    /// The reply could not be understood.
    case badReply(String)
    /// A file being uploaded could not be read (or changed while it was sent). Retry when it changes.
    case localFile(String)

    public var isTransient: Bool {
        switch self {
        case .unreachable, .unavailable, .badReply, .localFile: true
        case .unauthorized, .rejected, .conflict: false
        }
    }

    public var description: String {
        switch self {
        case .unreachable(let why): "endpoint unreachable: \(why)"
        case .unavailable(let status, let message, _): "endpoint answered \(status): \(message)"
        case .unauthorized(let status, let message): "token rejected (\(status)): \(message)"
        case .rejected(let status, let message): "rejected by the endpoint (\(status)): \(message)"
        case .conflict: "revision conflict (409)"
        case .badReply(let why): "unexpected reply from the endpoint: \(why)"
        case .localFile(let why): why
        }
    }
}
