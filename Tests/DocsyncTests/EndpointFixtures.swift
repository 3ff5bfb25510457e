import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import DocsyncPingPong
import DocsyncSyncRails
import DocsyncTestSupport
import Foundation
import Testing

/// An endpoint adapter on a live server, for the conformance suite: a new adapter adds a case
/// here and passes `EndpointConformanceTests` unchanged.
struct EndpointFixture: Sendable, CustomTestStringConvertible {
    let name: String
    let start: @Sendable () async throws -> LiveEndpoint

    var testDescription: String { name }

    static let all: [EndpointFixture] = [reference, syncRails]

    /// The reference endpoint (`docsync serve`'s routes) through the PingPong adapter.
    static let reference = EndpointFixture(name: "reference") {
        let server = try await TestServer.start()
        return LiveEndpoint(
            docType: "note", poison: #"{"id":"poison","docType":"no/slashes"}"#,
            make: { clientID, credential, clock in
                PingPongEndpoint(transport: HTTPTransport(baseURL: server.url, client: agentClient, clock: clock, clientID: clientID), token: credential)
            },
            credential: server.token, stop: { await server.stop() })
    }

    /// A sync-rails server through the sync-rails adapter.
    static let syncRails = EndpointFixture(name: "sync-rails") {
        let server = SyncRailsServer(token: "rails-token")
        try await server.start()
        return LiveEndpoint(
            docType: "events", poison: #"{"id":"poison","docType":"events","invalid":true}"#,
            make: { clientID, credential, clock in
                SyncRailsEndpoint(
                    transport: HTTPTransport(baseURL: server.origin, client: agentClient, clock: clock, clientID: clientID),
                    path: "/api/sync", resource: "events", token: credential)
            },
            credential: "rails-token", stop: { await server.stop() })
    }
}

/// A running server and a way to make clients of it.
struct LiveEndpoint: Sendable {
    /// The docType the endpoint carries.
    let docType: String
    /// A document this server refuses.
    let poison: String
    let make: @Sendable (_ clientID: String, _ credential: String, _ clock: ServerClock?) -> any DocumentEndpoint
    let credential: String
    let stop: @Sendable () async -> Void

    func client(_ id: String, clock: ServerClock? = nil) -> any DocumentEndpoint { make(id, credential, clock) }

    /// A change of a new or updated document in wire form.
    func change(_ id: String, _ fields: String, base: Int64? = nil, deleted: Bool = false) -> OutgoingChange {
        let stamp = Timestamp(unixMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)).rfc3339
        let body = #"{"id":"\#(id)","docType":"\#(docType)"\#(fields.isEmpty ? "" : ",")\#(fields),"updated_at":"\#(stamp)""#
            + (deleted ? #","deleted_at":"\#(stamp)"}"# : "}")
        return OutgoingChange(id: id, docType: docType, body: body, baseRevision: base)
    }
}
