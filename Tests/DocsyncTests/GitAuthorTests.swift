@testable import DocsyncAgent
import DocsyncGit
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

@Suite struct GitIdentityTests {
    /// A name comes from the server: whatever it holds, the commit header stays one line.
    @Test func aHostileAuthorNameCannotBreakTheCommitHeader() {
        let hostile = GitIdentity.author("eve>\nauthor Mallory <m@x> 0 +0000\n<", authors: [:])
        #expect(!hostile.name.contains("\n") && !hostile.name.contains("<") && !hostile.name.contains(">"))
        #expect(!hostile.email.contains("\n") && !hostile.email.contains(">") && hostile.email.hasSuffix("@docsync"))
        #expect(GitIdentity.author(String(repeating: "é", count: 5000), authors: [:]).name.utf8.count <= 200)
        #expect(GitIdentity.author(nil, authors: [:]).name == "unknown")
        #expect(GitIdentity.author("alice", authors: ["alice": "Alice Liddell <alice@example.org>"]) == GitIdentity(name: "Alice Liddell", email: "alice@example.org"))
        #expect(GitIdentity.author("bob", authors: [:]) == GitIdentity(name: "bob", email: "bob@docsync"))
    }

    /// One commit per author and pull batch, the batches of one author that follow each other
    /// made one (a catch-up's pages): interleaved authors keep their order.
    @Test func batchesOfOneAuthorInARowAreOneCommitAndOthersKeepTheirOrder() {
        func change(_ batch: Int64, _ author: String, _ id: String) -> IndexTransaction.GitChange {
            var change = IndexTransaction.GitChange(path: "note/\(id).json", oldPath: nil, fileHash: nil, docType: "note", docID: id, author: author, changedAt: 0, what: "new")
            change.batch = batch
            return change
        }
        let changes = [change(1, "alice", "a"), change(2, "alice", "b"), change(3, "alice", "c"), change(3, "bob", "d"), change(4, "bob", "e"), change(5, "alice", "f")]
        #expect(GitCommitter.groups(changes).map { $0.map(\.docID) } == [["a", "b", "c"], ["d", "e"], ["f"]])
    }

    /// Trust finding (fourth round, 6): a field named `"x\n\nCo-authored-by: …\nSigned-off-by: …"`
    /// put both trailers into docsync's commit, and an author name kept U+202E. As git itself
    /// reads the message: no trailer; as a reader sees the author: no reordering control.
    @Test func aFieldNameCannotForgeATrailerNorAnAuthorReorderWhatIsRead() throws {
        let forged = "x\n\nCo-authored-by: Mallory <m@x>\nSigned-off-by: Mallory <m@x>"
        let change = IndexTransaction.GitChange(
            path: "note/a.json", oldPath: nil, fileHash: nil, docType: "note", docID: "a\u{202E}b", author: "eve", changedAt: 0, what: forged)
        for message in [GitCommitter.message([change]), GitCommitter.message([change, change])] {
            let folder = try TempFolder("trailers")
            defer { folder.remove() }
            try folder.write("message", message)
            let trailers = try git(["interpret-trailers", "--parse", folder.file("message")], in: folder.path)
            #expect(trailers.isEmpty, "git reads trailers in \(message): \(trailers)")
            #expect(!message.unicodeScalars.contains("\u{202E}"))
        }
        #expect(GitCommitter.message([change]) == "note/a\\u{202e}b: x\\u{a}\\u{a}Co-authored-by: Mallory <m@x>\\u{a}Signed-off-by: Mallory <m@x>\n")
        #expect(GitIdentity.author("eve\u{202E}lin", authors: [:]).name == "evelin")
        #expect(GitIdentity.author("a\u{2066}b\u{2069}\u{200F}", authors: [:]).name == "ab")
        // git strips these from an identity's ends, and refuses the commit when nothing is left.
        #expect(GitIdentity.author("...", authors: [:]).name == "unknown")
        #expect(GitIdentity.author(" ;, ", authors: [:]).name == "unknown")
    }
}

/// The reference endpoint records who wrote each change: the name of the token, never what the
/// client claims.
@Suite struct UpdatedByTests {
    @Test func everyWriteCarriesItsTokensNameAndAClaimedNameIsReplaced() async throws {
        let tokens = try TempFolder("updated-by")
        defer { tokens.remove() }
        try tokens.write("tokens", "alice tok-alice\nbob tok-bob\ntok-bare\n")
        let server = try await TestServer.start(configure: { [tokens] in $0.tokenFile = tokens.file("tokens") })
        defer { Task { await server.stop() } }
        let (alice, bob, bare) = (
            APIClient(baseURL: server.url, token: "tok-alice"), APIClient(baseURL: server.url, token: "tok-bob"),
            APIClient(baseURL: server.url, token: "tok-bare"))
        #expect(try await alice.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","updated_by":"bob"}"#).status == 200)
        #expect(try await alice.documents(type: "note")["a"]?["updated_by"] == "alice", "a claimed name is replaced by the token's")
        let batch = #"{"since":0,"documents":[{"id":"b","docType":"note","updated_by":"alice"}]}"#
        #expect(try await bob.request("POST", "/api/sync", body: batch).status == 200)
        #expect(try await bob.documents(type: "note")["b"]?["updated_by"] == "bob")
        #expect(try await bare.request("DELETE", "/api/document", body: #"{"id":"a","docType":"note"}"#).status == 200)
        let deleted = try await alice.documents(type: "note")["a"]
        #expect(deleted?["updated_by"] == "anonymous" && deleted?["deleted_at"] != nil, "a token without a name deletes as anonymous")
    }
}
