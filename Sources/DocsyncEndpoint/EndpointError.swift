import DocsyncModel

/// How a request to the endpoint failed, sorted by what the engine does about it. Adapters map
/// their server's status codes and messages onto these; the engine reads nothing else.
public enum EndpointError: Error, Sendable, CustomStringConvertible {
    /// No answer: connection refused or reset, timeout, name not resolved. Retry later.
    case unreachable(String)
    /// The endpoint is there but cannot take the request now (5xx, 429, a target not there yet).
    /// Retry later, no sooner than `retryAfter` when the server said so.
    case unavailable(String, retryAfter: Duration?)
    /// The credential is wrong. Retrying would only hammer the server: pause until it changes.
    case unauthorized(String)
    /// The server refuses this document for `reason`. Retrying unchanged content cannot help.
    case rejected(String)
    /// The token is good but may not do this (HTTP 403): `right` names what it lacks, when the
    /// server says. The document is held as "not allowed", its edit kept in the file; asked again
    /// when the file or the token changes, or after a long wait (the server's rights may change).
    case forbidden(right: String?, reason: String)
    /// The write was based on a revision that is no longer current; `current` is the server's
    /// document when the reply carried it.
    case conflict(current: JSONObject?)
    /// As ``conflict``, where the current version is this client's own earlier write (its reply
    /// was lost): the change being sent, made after it, is not in conflict with anyone and goes
    /// again over `current`'s revision.
    case conflictWithOwnWrite(current: JSONObject)
    /// The reply could not be understood. Retry later.
    case badReply(String)
    /// The reply was larger than this side takes, in bytes or in values (``ProtocolLimits``).
    /// Ask for less where the call can (a smaller page); else retry later.
    case tooLarge(String)
    /// A file being uploaded could not be read (or changed while it was sent). Retry when it changes.
    case localFile(String)
    /// The endpoint does not offer this at all (pull from a push-only server). Do not ask again.
    case unsupported(String)

    public var isTransient: Bool {
        switch self {
        case .unreachable, .unavailable, .badReply, .tooLarge, .localFile: true
        case .unauthorized, .rejected, .forbidden, .conflict, .conflictWithOwnWrite, .unsupported: false
        }
    }

    public var description: String {
        switch self {
        case .unreachable(let why): "endpoint unreachable: \(why)"
        case .unavailable(let why, _): "endpoint answered \(why)"
        case .unauthorized(let why): "token rejected (\(why))"
        case .rejected(let reason): "rejected by the endpoint (\(reason))"
        case .forbidden(let right, let reason): "not allowed: \(reason)" + (right.map { " (the token needs \($0))" } ?? "")
        case .conflict: "revision conflict"
        case .conflictWithOwnWrite: "revision conflict with this folder's own earlier write"
        case .badReply(let why): "unexpected reply from the endpoint: \(why)"
        case .tooLarge(let why): "the endpoint's reply is larger than this side takes: \(why)"
        case .localFile(let why): why
        case .unsupported(let why): why
        }
    }
}
