import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncKinto
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

    static let all: [EndpointFixture] = [memory, reference, syncRails, kinto]

    /// The reference endpoint's rules in memory, no HTTP (`MemoryEndpoint`): the engine's tests
    /// that need no network run on it.
    static let memory = EndpointFixture(name: "memory") {
        let server = MemoryServer()
        return LiveEndpoint(
            docType: "note", poison: #"{"id":"poison","docType":"no/slashes"}"#,
            make: { clientID, credential, clock in server.client(id: clientID, credential: credential, clock: clock) },
            credential: server.token, stop: {})
    }

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

extension EndpointFixture {
    /// A real Kinto (memory backend) through the Kinto adapter; `user:password` credentials.
    static let kinto = EndpointFixture(name: "kinto") {
        let server = try await KintoServer.start(attachments: true)
        // The bucket and collection made with the right credential, as a user's first sync does:
        // Kinto's basicauth takes any password, and a wrong one is another user.
        let owner = KintoEndpoint(transport: HTTPTransport(baseURL: server.url, client: agentClient, clock: nil), bucket: "folder", credential: "alice:secret")
        try await owner.prepare(["note"])
        return LiveEndpoint(
            docType: "note", poison: #"{"id":"poison","docType":"not a collection"}"#, poisonType: "not a collection",
            make: { clientID, credential, clock in
                KintoEndpoint(transport: HTTPTransport(baseURL: server.url, client: agentClient, clock: clock, clientID: clientID), bucket: "folder", credential: credential)
            },
            credential: "alice:secret", stop: { await server.stop() })
    }
}

/// A running server and a way to make clients of it.
struct LiveEndpoint: Sendable {
    /// The docType the endpoint carries.
    let docType: String
    /// A document this server refuses, and its docType.
    let poison: String
    var poisonType: String? = nil
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
