import DocsyncStore
import Hummingbird

/// The reference server's request context: Hummingbird's own, and the name of the token that
/// authorised the request, which every write records as its author (`updated_by`).
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// Set by ``TokenMiddleware`` once the token is checked; `nil` before.
    var author: String?
    /// What the token may do (``Access``), set with `author`.
    var access: Access = .everything

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
