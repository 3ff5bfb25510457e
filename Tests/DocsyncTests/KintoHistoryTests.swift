import DocsyncEndpoint
import DocsyncHTTP
import DocsyncKinto
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

extension LongSuites.KintoTests {
    func client(_ server: KintoServer, _ credential: String) -> KintoEndpoint {
        KintoEndpoint(transport: HTTPTransport(baseURL: server.url, client: agentClient, clock: nil), bucket: "folder", credential: credential)
    }

    func note(_ id: String, _ fields: String) -> OutgoingChange {
        OutgoingChange(id: id, docType: "note", body: #"{"id":"\#(id)","docType":"note",\#(fields)}"#, baseRevision: nil)
    }

    /// With Kinto's history plugin on, each pulled version names who wrote it (`updated_by`, which
    /// git commits take as their author); a record's own `updated_by` member, anyone's to write, is
    /// not believed; without the plugin there is no author.
    @Test(arguments: [true, false])
    func theHistoryPluginNamesWhoWroteEachVersion(_ history: Bool) async throws {
        let server = try await KintoServer.start(history: history)
        defer { Task { await server.stop() } }
        let alice = client(server, "alice:secret")
        try await alice.prepare(["note"])
        // Bob may write in alice's bucket, as a shared folder's second user.
        let (api, auth) = kintoAPI(server)
        let shared = try await api.request(
            "PATCH", "/buckets/folder", body: #"{"permissions":{"write":["system.Authenticated"]}}"#, token: .some(nil),
            headers: auth)
        #expect(shared.status == 200, "\(shared.text)")
        let bob = client(server, "bob:secret")
        _ = try await alice.push([note("a1", #""title":"alice's","updated_by":"forged""#)], pullingAfter: nil)
        _ = try await bob.push([note("b1", #""title":"bob's""#)], pullingAfter: nil)

        let pulled = try await client(server, "alice:secret").pull(after: nil, wait: nil).changes
        let authors = Dictionary(uniqueKeysWithValues: pulled.compactMap { c in c["id"]?.string.map { ($0, c[DocumentRules.updatedByKey]?.string) } })
        #expect(Set(authors.keys) == ["a1", "b1"])
        if history {
            let (a, b) = (try #require(authors["a1"] ?? nil), try #require(authors["b1"] ?? nil))
            #expect(a.hasPrefix("basicauth:") && b.hasPrefix("basicauth:") && a != b, "\(authors)")
        } else {
            #expect(authors.values.allSatisfy { $0 == nil }, "no author without the plugin, not the record's own member: \(authors)")
        }
    }
}
