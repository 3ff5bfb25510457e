import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A small server speaking the sync-ios seed's sync-rails dialect, for tests: one
/// `POST /api/sync` with `{"updated_at": …, "<resource>": [objects]}`; each object is upserted by
/// `uuid` and stamped with the server's `updated_at` (whole seconds, as Rails writes it); the
/// reply lists what was saved and everything stamped after the posted `updated_at`, and the
/// objects it refused (`"invalid": true`, or no `uuid`). Nothing is ever removed.
public final class SyncRailsServer: Sendable {
    public let resource: String
    private struct State {
        var objects: [String: JSONObject] = [:]
        var order: [String] = []
        /// A stepped clock (unix seconds) for tests about the one-second resolution; `nil` = real time.
        var now: Int64?
        var calls = 0
    }

    private let state = Mutex(State())
    private let boundPort = Mutex(0)
    private let group = Mutex<ServiceGroup?>(nil)

    /// Requests must carry `Authorization: Token token=<token>` when one is set (401 otherwise).
    public let token: String?

    public init(resource: String = "events", token: String? = nil) {
        self.resource = resource
        self.token = token
    }

    /// The `--endpoint` that selects the sync-rails adapter for this server.
    public var endpoint: String { "syncrails+http://127.0.0.1:\(boundPort.withLock { $0 })/api/sync?resource=\(resource)" }
    public var origin: String { "http://127.0.0.1:\(boundPort.withLock { $0 })" }

    /// Every object the server holds, by uuid (tombstones included).
    public var objects: [String: JSONObject] { state.withLock { $0.objects } }
    public var calls: Int { state.withLock { $0.calls } }

    /// Holds the server's clock at `seconds` (unix); `nil` lets it follow real time again.
    public func setNow(_ seconds: Int64?) { state.withLock { $0.now = seconds } }

    /// Stores `object` as if another client had posted it.
    public func put(_ object: JSONValue) {
        guard case .object(let o) = object else { return }
        _ = state.withLock { Self.save(o, in: &$0) }
    }

    public func start() async throws {
        let router = Router()
        router.post("/api/sync") { request, _ in try await self.sync(request) }
        let (port, services) = await LoopbackServer.start(router, label: "sync-rails")
        group.withLock { $0 = services }
        boundPort.withLock { $0 = port }
    }

    public func stop() async {
        await group.withLock { $0 }?.triggerGracefulShutdown()
    }

    private func sync(_ request: Request) async throws -> Response {
        var request = request
        if let token, request.headers[.authorization] != "Token token=\(token)" { return Self.reply(401, #"{"error":"bad token"}"#) }
        let body = try await request.collectBody(upTo: 64 << 20)
        guard case .object(let call)? = try? JSONParser.parse(Array(buffer: body)) else { return Self.reply(400, #"{"error":"not JSON"}"#) }
        let since = call["updated_at"]?.string.flatMap { Timestamp(rfc3339: $0) }.map { $0.unixMilliseconds / 1000 } ?? 0
        let posted: [JSONValue] = if case .array(let list)? = call[resource] { list } else { [] }
        let (success, errors) = state.withLock { state -> ([JSONValue], [JSONValue]) in
            state.calls += 1
            var saved: [String] = []
            var errors: [JSONValue] = []
            for case .object(let object) in posted {
                guard let uuid = object["uuid"]?.string, object["invalid"] != true else {
                    errors.append(["uuid": object["uuid"] ?? .null, "message": "Object is invalid."])
                    continue
                }
                saved.append(Self.save(object, in: &state))
                _ = uuid
            }
            let found = state.order.filter { uuid in
                !saved.contains(uuid) && (Self.seconds(state.objects[uuid]!) ?? 0) > since
            }
            return ((saved + found).map { .object(state.objects[$0]!) }, errors)
        }
        let reply: JSONValue = .object(JSONObject([(key: resource, value: ["success": .array(success), "error": .array(errors)])]))
        return Self.reply(200, JSONWriter.string(reply))
    }

    /// Upserts `object` with a fresh server stamp; returns its uuid.
    private static func save(_ object: JSONObject, in state: inout State) -> String {
        let uuid = object["uuid"]?.string ?? UUID().uuidString.lowercased()
        var stored = state.objects[uuid] ?? JSONObject()
        for (key, value) in object.members where key != "updated_at" { stored[key] = value }
        stored["uuid"] = .string(uuid)
        if stored["deleted_at"] == nil { stored["deleted_at"] = .null }
        let now = state.now ?? Int64(Date().timeIntervalSince1970)
        stored["updated_at"] = .string(String(Timestamp(unixMilliseconds: now * 1000).rfc3339.prefix(19)) + "Z")
        if state.objects[uuid] == nil { state.order.append(uuid) }
        state.objects[uuid] = stored
        return uuid
    }

    private static func seconds(_ object: JSONObject) -> Int64? {
        object["updated_at"]?.string.flatMap { Timestamp(rfc3339: $0) }.map { $0.unixMilliseconds / 1000 }
    }

    private static func reply(_ status: Int, _ body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
