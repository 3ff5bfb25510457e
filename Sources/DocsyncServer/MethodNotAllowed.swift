import HTTPTypes
import Hummingbird

/// `405 Method Not Allowed` with `Allow` for a path the server answers with other methods (the
/// router alone says 404, as for a path it does not know at all). Innermost, so a request
/// without a token is still 401 whatever its method.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    /// Each route's path, split into components (`{name}` matches any one), with its methods.
    let table: [(components: [Substring], methods: [String])]

    /// From routes written `METHOD /path/{parameter}` (``ReferenceServer/routes()``).
    init(routes: [String]) {
        var byPath: [String: [String]] = [:]
        for route in routes {
            let parts = route.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            byPath[String(parts[1]), default: []].append(String(parts[0]))
        }
        table = byPath.map { path, methods in (path.split(separator: "/"), methods.sorted()) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let allowed = allowedMethods(request.uri.path) else { throw error }
            var reply = ReferenceServer.errorResponse(
                HTTPRefusal(405, "\(request.method) is not served at \(request.uri.path); it answers \(allowed.joined(separator: ", "))"))
            reply.headers[.allow] = allowed.joined(separator: ", ")
            return reply
        }
    }

    /// The methods a route with this path answers, or `nil` when no route has this path.
    func allowedMethods(_ path: String) -> [String]? {
        let segments = path.split(separator: "/")
        for (components, methods) in table where components.count == segments.count {
            let matches = zip(components, segments).allSatisfy { template, segment in
                (template.hasPrefix("{") && template.hasSuffix("}")) || template == segment
            }
            if matches { return methods }
        }
        return nil
    }
}
