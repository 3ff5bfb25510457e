import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The built `docsync` binary, as a user runs it: `serve` on port 0 and `watch` on a temp folder,
/// as separate processes talking HTTP over loopback.
extension HeavySuites {
@Suite(.serialized) struct EndToEndTests {
    struct Setup {
        let work: TempFolder
        let docs: TempFolder
        let server: DocsyncProcess
        let url: String
        let tokenFile: String
        let api: APIClient

        static func start() async throws -> Setup {
            let work = try TempFolder("e2e-work")
            let docs = try TempFolder("e2e-docs")
            let token = "e2e-\(UUID().uuidString)"
            try work.write("token", token + "\n")
            let server = try DocsyncProcess(
                ["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")],
                logDirectory: work.path, name: "serve")
            let url = try await server.firstLine()
            #expect(url.hasPrefix("http://127.0.0.1:"))
            return Setup(work: work, docs: docs, server: server, url: url, tokenFile: work.file("token"), api: APIClient(baseURL: url, token: token))
        }

        func watch(name: String = "watch") throws -> DocsyncProcess {
            try DocsyncProcess(["watch", docs.path, "--endpoint", url, "--token-file", tokenFile], logDirectory: work.path, name: name)
        }

        func status() async throws -> JSONObject {
            let (code, out, err) = try await runDocsync(["status", docs.path, "--json"], logDirectory: work.path)
            #expect(code == 0, "\(err)")
            return try #require(try JSONParser.parse(out.trimmingCharacters(in: .whitespacesAndNewlines)).object)
        }

        func finish() async {
            await server.stop()
            work.remove()
            docs.remove()
        }
    }

    @Test func twoHundredDocumentsCreatedEditedMovedDeletedAndARestartPushesNothing() async throws {
        let s = try await Setup.start()
        defer { Task { await s.finish() } }
        let agent = try s.watch()
        for i in 0..<200 {
            try s.docs.write("items/batch\(i % 4)/item\(i).json", #"{"docType":"item","n":\#(i),"price":\#(i).10}"#)
        }
        // Wait until every file has its id written back and the server has all 200.
        #expect(await eventually(timeout: .seconds(60)) {
            (try? await s.api.documents(type: "item").count) == 200
        })
        var ids: [Int: String] = [:]
        #expect(await eventually(timeout: .seconds(30)) {
            for i in 0..<200 where ids[i] == nil {
                ids[i] = try? idOf(s.docs, "items/batch\(i % 4)/item\(i).json")
            }
            return ids.count == 200
        })
        // Edits, moves into folders that do not exist yet and deletions, on a loaded machine: a
        // move the watcher sees in two batches is still one move (issue 36, rule 9).
        let hog = CPUHog()
        defer { hog.stop() }
        for i in 0..<50 {
            try s.docs.write("items/batch\(i % 4)/item\(i).json", #"{"id":"\#(ids[i]!)","docType":"item","n":\#(i),"edited":true}"#)
        }
        for i in 50..<70 { try s.docs.move("items/batch\(i % 4)/item\(i).json", "moved/sub/item\(i).json") }
        for i in 70..<90 { try s.docs.remove("items/batch\(i % 4)/item\(i).json") }

        let expectedLive = Set((0..<200).filter { !(70..<90).contains($0) }.map { ids[$0]! })
        let expectedDeleted = Set((70..<90).map { ids[$0]! })
        #expect(await eventually(timeout: .seconds(60)) {
            guard let docs = try? await s.api.documents(type: "item") else { return false }
            let live = Set(docs.filter { $0.value["deleted_at"] == nil }.keys)
            let deleted = Set(docs.filter { $0.value["deleted_at"] != nil }.keys)
            let edited = (0..<50).allSatisfy { docs[ids[$0]!]?["edited"] == true }
            return live == expectedLive && deleted == expectedDeleted && edited
        })
        hog.stop()
        let docs = try await s.api.documents(type: "item")
        #expect(docs.count == 200, "no document created twice")
        for i in 50..<70 { #expect(docs[ids[i]!]?["rev"] == .number("1"), "a move is not a write") }
        #expect(docs[ids[199]!]?["price"] == .number("199.10"))
        #expect(try await s.status()["pending"] == .number("0"))
        // Files read moments after they were saved are read once more in the background, once
        // their stat can be trusted; then the restart below reads nothing.
        let index = try Index.open(root: s.docs.path)
        #expect(await eventually { (try? await index.read { try $0.unsettledFiles(limit: 1) })?.isEmpty == true })

        await agent.stop()
        #expect(agent.process.terminationStatus == 0, "graceful stop: \(agent.stderr)")
        // Restart: the tree is unchanged, so nothing is sent.
        let before = try await s.api.documents(type: "item")
        let again = try s.watch(name: "watch2")
        #expect(await eventually { again.stderr.contains("watching") })
        try s.docs.write("marker/done.json", #"{"docType":"marker"}"#)
        #expect(await eventually { (try? await s.api.documents(type: "marker").count) == 1 })
        let after = try await s.api.documents(type: "item")
        #expect(after == before, "a restart on an unchanged tree pushes nothing")
        #expect(await eventually { again.stderr.contains("scan.queued=0") }, "\(again.stderr)")
        #expect(await eventually { again.stderr.contains("scan.bytes_read=0") }, "no file content read again: \(again.stderr)")
        await again.stop()
    }

    @Test func syncExitsNonZeroWhenTheEndpointIsUnreachableAndKeepsChangesQueued() async throws {
        let s = try await Setup.start()
        defer { Task { await s.finish() } }
        for i in 0..<5 { try s.docs.write("notes/n\(i).json", #"{"docType":"note","i":\#(i)}"#) }
        let dead = "http://127.0.0.1:9"  // discard port: nothing listens
        let (code, out, _) = try await runDocsync(["sync", s.docs.path, "--endpoint", dead, "--token-file", s.tokenFile], logDirectory: s.work.path)
        #expect(code != 0)
        #expect(out.contains("not in sync") && out.contains("pending: 5"), "\(out)")
        let status = try await s.status()
        #expect(status["pending"] == .number("5"))
        #expect(status["last_error"]?.string?.contains("unreachable") == true)
        #expect(status["offline_since"]?.string != nil)
        #expect(status["next_retry_in_s"] != .null)
        let (code2, out2, err2) = try await runDocsync(["sync", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile], logDirectory: s.work.path)
        #expect(code2 == 0, "\(out2) \(err2)")
        #expect(out2.contains("in sync"))
        #expect(try await s.api.documents(type: "note").count == 5)
        #expect(try await s.status()["offline_since"] == .null)
    }

    @Test func commandsExplainMissingTokensAndBadArguments() async throws {
        let work = try TempFolder("cli")
        defer { work.remove() }
        let (code, _, err) = try await runDocsync(["watch", work.path, "--endpoint", "http://127.0.0.1:1"], logDirectory: work.path)
        #expect(code != 0 && err.contains("no token: pass --token-file FILE or set DOCSYNC_TOKEN"), "\(err)")
        let (code2, _, err2) = try await runDocsync(["sync", work.path, "--endpoint", "ftp://x"], environment: ["DOCSYNC_TOKEN": "t"], logDirectory: work.path)
        #expect(code2 != 0 && err2.contains("--endpoint must be one of http(s)://HOST[:PORT]"), "\(err2)")
        let (code3, _, err3) = try await runDocsync(["status", work.file("nowhere")], logDirectory: work.path)
        #expect(code3 != 0 && err3.contains("no docsync index yet"), "\(err3)")
        for (flag, value) in [("--tombstone-retention", "0d"), ("--tombstone-retention", "30"), ("--tombstone-retention", "99999999999d")] {
            let (bad, _, why) = try await runDocsync(["serve", "--data", work.file("d"), flag, value], logDirectory: work.path)
            #expect(bad != 0 && why.contains("--tombstone-retention takes a duration like 30d"), "\(value): \(why)")
        }
        for types in ["", "a/b", ",,"] {
            let (bad, _, why) = try await runDocsync(["sync", work.path, "--endpoint", "http://127.0.0.1:1", "--types", types], environment: ["DOCSYNC_TOKEN": "t"], logDirectory: work.path)
            #expect(bad != 0 && why.contains("--types"), "\(types): \(why)")
        }
        let (code4, help, _) = try await runDocsync(["--help"], logDirectory: work.path)
        #expect(code4 == 0)
        for command in ["up", "init", "watch", "sync", "status", "serve", "clock"] { #expect(help.contains(command)) }
    }

    @Test func upServesAndSyncsInOneProcessWithAGeneratedToken() async throws {
        let docs = try TempFolder("up")
        let work = try TempFolder("up-logs")
        defer { docs.remove(); work.remove() }
        try docs.write("notes/hello.json", #"{"docType":"note","title":"hello"}"#)
        let up = try DocsyncProcess(["up", docs.path, "--port", "0"], logDirectory: work.path, name: "up")
        let url = try await up.firstLine()
        #expect(await eventually { up.stdout.contains("token: ") })
        let token = try docs.read(".docsync/server/token").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(up.stdout.contains("token: in \(docs.path)/.docsync/server/token"), "where the token is: \(up.stdout)")
        #expect(!up.stdout.contains(token) && !up.stderr.contains(token), "the token itself is never printed")
        let api = APIClient(baseURL: url, token: token)
        #expect(await eventually { (try? await api.documents(type: "note").first?.value["title"]) == "hello" })
        #expect(try docs.read(".docsync/.gitignore") == "*\n")
        await up.stop()
        #expect(up.process.terminationStatus == 0, "\(up.stderr)")
    }
}
}
