import DocsyncModel
import DocsyncServer
import DocsyncTestSupport
import Foundation
import Testing

/// Rights per token on every route of a real `docsync serve` (in process, over HTTP): each kind
/// of token against the batch call, PUT, POST, DELETE, GET by id, the listing, the long poll,
/// uploads, downloads, `/api/stats` and `/metrics`. A refusal is 403 naming the right; what may not
/// be read is left out, and answered as for what does not exist.
extension HeavySuites {
@Suite(.serialized) struct RightsRouteTests {
    final class Rig: Sendable {
        let server: TestServer
        let tokens: TempFolder
        let full, viewer, bob, inbox, noteReader: APIClient
        let fileURL: String

        init() async throws {
            tokens = try TempFolder("rights")
            let hashed = TokenDigest.hex(TokenDigest.of(Array("tok-viewer".utf8)))
            try tokens.write("tokens", """
                alice   tok-alice                                  # every right
                viewer  sha256:\(hashed)   read:*
                bob     tok-bob    read:* write:note write:task
                inbox   tok-inbox  create:report
                reader  tok-reader read:note

                """)
            server = try await TestServer.start(configure: { [tokens] in
                $0.tokenFile = tokens.file("tokens")
                $0.metricsText = { .init(string: "# metrics\n") }
            })
            let url = server.url
            (full, viewer, bob, inbox, noteReader) = (
                APIClient(baseURL: url, token: "tok-alice"), APIClient(baseURL: url, token: "tok-viewer"), APIClient(baseURL: url, token: "tok-bob"),
                APIClient(baseURL: url, token: "tok-inbox"), APIClient(baseURL: url, token: "tok-reader"))
            for body in [#"{"id":"n1","docType":"note","v":1}"#, #"{"id":"s1","docType":"secret","v":1}"#, #"{"id":"r1","docType":"report","v":1}"#] {
                #expect(try await full.request("PUT", "/api/document", body: body).status == 200)
            }
            let upload = try await full.upload(Array("secret bytes".utf8), fileName: "s.txt", targetID: "s1", docType: "secret", property: "file")
            fileURL = try #require(upload.json?.object?["data"]?.object?["file"]?.string)
        }

        func finish() async {
            await server.stop()
            tokens.remove()
        }
    }

    @Test func everyRouteRefusesWhatTheTokenMayNotDoNamingTheRight() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        func refused(_ reply: APIClient.Reply, _ right: String) -> Bool {
            reply.status == 403 && reply.json?.object?["right"]?.string == right
        }
        #expect(refused(try await rig.viewer.request("PUT", "/api/document", body: #"{"id":"n1","docType":"note","v":2}"#), "write:note"))
        #expect(refused(try await rig.viewer.request("POST", "/api/document", body: #"{"docType":"note"}"#), "write:note"))
        #expect(refused(try await rig.viewer.request("DELETE", "/api/document", body: #"{"id":"n1","docType":"note"}"#), "write:note"))
        #expect(refused(try await rig.bob.request("PUT", "/api/document", body: #"{"id":"x","docType":"schema"}"#), "write:schema"))
        #expect(refused(try await rig.inbox.request("PUT", "/api/document", body: #"{"id":"r1","docType":"report","v":9}"#), "write:report"))
        #expect(refused(try await rig.noteReader.request("GET", "/api/document/type/secret"), "read:secret"))
        #expect(refused(try await rig.noteReader.request("GET", "/api/stats"), "read:*"))
        #expect(refused(try await rig.noteReader.request("GET", "/metrics"), "read:*"))
        let upload = try await rig.viewer.upload(Array("x".utf8), fileName: "x.txt", targetID: "n1", docType: "note", property: "f")
        #expect(upload.status == 403)
        // What each may do, it does.
        #expect(try await rig.bob.request("PUT", "/api/document", body: #"{"id":"n1","docType":"note","v":2}"#).status == 200)
        #expect(try await rig.viewer.request("GET", "/api/stats").status == 200)
        #expect(try await rig.viewer.request("GET", "/api/document/s1").status == 200)
        #expect(try await rig.full.request("GET", "/metrics").status == 200)
    }

    @Test func aBatchWithOneRefusedDocumentStoresTheRestAndSaysWhich() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let reply = try await rig.bob.request("POST", "/api/sync", body: #"""
            {"since":0,"echo":false,"documents":[{"id":"n5","docType":"note"},{"id":"z5","docType":"secret"},{"id":"t5","docType":"task"}]}
            """#)
        #expect(reply.status == 200)
        let errors = reply.json?.object?["documents"]?.object?["error"]?.elements?.compactMap(\.object) ?? []
        #expect(errors.map { $0["id"]?.string } == ["z5"])
        #expect(errors.first?["status"] == .number("403") && errors.first?["right"] == .string("write:secret"))
        #expect(try await rig.full.request("GET", "/api/document/n5").status == 200)
        #expect(try await rig.full.request("GET", "/api/document/t5").status == 200)
        #expect(try await rig.full.request("GET", "/api/document/z5").status == 404)
    }

    /// A token never learns what it may not read: not a document, its id or existence, a count,
    /// a file, or a change announced to a long poll.
    @Test func aRefusedTokenLearnsNothing() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let hidden = try await rig.noteReader.request("GET", "/api/document/s1")
        let missing = try await rig.noteReader.request("GET", "/api/document/no-such-id")
        #expect(hidden.status == 404 && missing.status == 404)
        #expect(hidden.text.replacingOccurrences(of: "s1", with: "X") == missing.text.replacingOccurrences(of: "no-such-id", with: "X"))
        let pulled = try await rig.noteReader.request("POST", "/api/sync", body: #"{"since":0}"#)
        #expect(pulled.text.contains("n1") && !pulled.text.contains("s1") && !pulled.text.contains("secret"))
        let dropBox = try await rig.inbox.request("POST", "/api/sync", body: #"{"since":0,"documents":[{"id":"r9","docType":"report","v":1}]}"#)
        #expect(dropBox.status == 200 && !dropBox.text.contains("r1") && !dropBox.text.contains("n1"), "creates, reads back nothing: \(dropBox.text)")
        #expect(try await rig.inbox.request("GET", "/api/document/r9").status == 404, "a drop box cannot read its own report back")
        // The file of a document it may not read is not there for it; for a reader of secrets it is.
        let path = String(rig.fileURL.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
        #expect(try await rig.noteReader.request("GET", path).status == 404)
        #expect(try await rig.viewer.request("GET", path).status == 200)
        #expect(try await rig.noteReader.request("DELETE", "/api/document", body: #"{"id":"s1","docType":"secret"}"#).status == 404)
        // A long poll is not woken with a change it may not read.
        let poll = Task { try await rig.noteReader.request("POST", "/api/sync", body: #"{"since":\#(try await Self.cursor(rig.noteReader)),"wait":3}"#) }
        try await Task.sleep(for: .milliseconds(300))  // the poll is held; not a synchronisation of what is asserted
        #expect(try await rig.full.request("PUT", "/api/document", body: #"{"id":"s2","docType":"secret"}"#).status == 200)
        let answer = try await poll.value
        #expect(answer.status == 200 && !answer.text.contains("s2"), "\(answer.text)")
    }

    /// Rights change with the file: an open long poll of a token that lost a right ends at once.
    @Test func aLongPollEndsWhenItsTokensRightsChange() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let since = try await Self.cursor(rig.viewer)
        let poll = Task { try await rig.viewer.request("POST", "/api/sync", body: #"{"since":\#(since),"wait":20}"#) }
        try await Task.sleep(for: .milliseconds(300))  // the poll is held
        let changed = ContinuousClock.now
        let text = try rig.tokens.read("tokens").replacingOccurrences(of: "read:*", with: "read:note")
        try rig.tokens.write("tokens", text)
        let answer = try await poll.value
        #expect(answer.status == 200)
        #expect(ContinuousClock.now - changed < .seconds(5), "ended at once, not after its 20 s")
        #expect(try await rig.viewer.request("GET", "/api/document/s1").status == 404, "the new rights hold")
    }

    /// Trust finding (fourth round, 9): bob sending alice's `X-Docsync-Client` made alice's pull
    /// leave bob's write out, as if it were hers. A client id belongs to its token.
    @Test func aClientIDIsBoundToItsToken() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let alice = [("X-Docsync-Client", "client-of-alice")]
        #expect(try await rig.full.request("POST", "/api/sync", body: #"{"since":0,"documents":[{"id":"mine","docType":"note"}]}"#, headers: alice).status == 200)
        let forged = try await rig.bob.request("POST", "/api/sync", body: #"{"since":0,"documents":[{"id":"from-bob","docType":"note"}]}"#, headers: alice)
        #expect(forged.status == 200)
        let pulled = try await rig.full.request("POST", "/api/sync", body: #"{"since":0}"#, headers: alice)
        #expect(pulled.text.contains("from-bob"), "bob's write reaches alice's pull: \(pulled.text)")
        #expect(!pulled.text.contains("\"mine\""), "alice's own write is still not echoed to her")
    }

    static func cursor(_ api: APIClient) async throws -> Int64 {
        let reply = try await api.request("POST", "/api/sync", body: #"{"since":0}"#)
        guard case .number(let n)? = reply.json?.object?["cursor"], let cursor = Int64(n) else { throw ProcessFailure("no cursor: \(reply.text)") }
        return cursor
    }
}
}
