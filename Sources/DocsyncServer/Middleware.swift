import DocsyncModel
import DocsyncStore
import HTTPTypes
import Hummingbird
import Metrics
import NIOCore

/// Requires `Authorization: Token token=<token>` (the seed's scheme) on every request, with one
/// of the tokens of `tokens`; the token's name goes on as the request's author. The API's
/// description is the one exception: it is read with no rights at all.
struct TokenMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let tokens: TokenStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method == .get && request.uri.path == ServiceRoutes.descriptionPath {
            var context = context
            context.access = Access()
            return try await next(request, context)
        }
        guard let header = request.headers[.authorization] else {
            return ReferenceServer.errorResponse(HTTPRefusal(401, "missing Authorization header (expected: Token token=…)"))
        }
        guard let identity = tokens.identify(Array(header.utf8)) else {
            return ReferenceServer.errorResponse(HTTPRefusal(401, "invalid token"))
        }
        var context = context
        context.author = identity.name
        context.access = identity.access
        return try await next(request, context)
    }
}

/// Stamps every reply with the server's time for client clock calibration (ServerSync's
/// complementary server side): `X-Sync-UTC` is the UTC in Unix nanoseconds taken as late as possible
/// (after the handler, just before the head is written), `X-Sync-Duration` the nanoseconds spent.
/// Outermost, so errors and 401s carry the stamps too, and the requests in flight are counted.
/// It also names the store (`X-Docsync-Store`), so an agent notices a replaced server.
struct ClockHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let wallClock: @Sendable () -> Int64
    /// Asked per reply: a store that connects late (PostgreSQL during an outage) has none before.
    let storeID: @Sendable () -> String
    static var storeName: HTTPField.Name { HTTPField.Name("X-Docsync-Store")! }
    static var utcName: HTTPField.Name { HTTPField.Name("X-Sync-UTC")! }
    static var durationName: HTTPField.Name { HTTPField.Name("X-Sync-Duration")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        // Requests whose head has been read and whose handler has not yet answered: what a
        // graceful shutdown waits for (a body still arriving counts; an idle connection does not).
        let inFlight = Meter(label: "docsync_server_requests_in_flight")
        inFlight.increment()
        defer { inFlight.decrement() }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            response = ReferenceServer.errorResponse(HTTPRefusal(Int(error.status.code), error.body ?? error.status.reasonPhrase))
        } catch {
            response = ReferenceServer.errorResponse(error)
        }
        let elapsed = ContinuousClock.now - start
        let nanos = elapsed.wholeNanoseconds
        // By the route's pattern (`/api/document/{id}`), never the path a client chose.
        let route = context.endpointPath ?? "unmatched"
        Timer(
            label: "docsync_server_request_duration_seconds",
            dimensions: [("route", route), ("method", request.method.rawValue), ("code", String(response.status.code))],
            preferredDisplayUnit: .seconds
        ).recordNanoseconds(nanos)
        response.headers[Self.durationName] = String(nanos)
        response.headers[Self.utcName] = String(wallClock())
        response.headers[.cacheControl] = "no-store"
        let store = storeID()
        if !store.isEmpty { response.headers[Self.storeName] = store }
        return response
    }
}
