#if canImport(Glibc)
import Glibc
#endif
@testable import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// The engine's rules (docs/ARCHITECTURE.md, "The engine's rules") that need the real server,
/// a disk that fills or a reply lost on the wire, each against the case that broke it: the cursor
/// moves only past what is durable, nothing loops without backing off, a lost reply never
/// overwrites someone else's edit. Those that hold whatever the adapter run in memory
/// (MemoryEngineTests+Promises).
extension HeavySuites {
@Suite(.serialized) struct EnginePromisesTests {
    /// Regression: on a folder that filled up, pulled documents that could not be written were
    /// logged and passed: the cursor moved past them, `status` said synced, and neither freeing
    /// the space nor a restart brought them back.
    @Test func pulledDocumentsThatDidNotFitArriveOnceSpaceIsFreedWithoutARestart() async throws {
        // The docType's folder is a small tmpfs of its own: its files run out of space while the
        // index (elsewhere in the tree) still has room, as on a disk whose last free blocks went
        // to the index's log.
        let folder = try TempFolder("full-pull")
        defer { folder.remove() }
        guard let disk = notesOnASmallDisk(folder, size: "256k") else { return }
        defer { disk.unmount() }
        let server = try await TestServer.start()
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("note/first.json", #"{"id":"first","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["first"] != nil })
        // Fill the folder's disk, leaving room for a few of the pulled documents, not all.
        disk.fill(leaving: 64 << 10)
        let pad = String(repeating: "x", count: 7_000)
        let ids = (0..<30).map { "pulled\($0)" }
        for id in ids {
            #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"\#(id)","docType":"note","pad":"\#(pad)"}"#).status == 200)
        }
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.pullFailureCount ?? 0 > 0 }, "\(agent.logs.all.suffix(4))")
        let whileFull = try await AgentStatus.read(root: folder.path)
        #expect(!whileFull.inSync(), "status does not say synced while pulled changes are missing")
        #expect(whileFull.text(now: 0).contains("could not be written into the folder"), "\(whileFull.text(now: 0))")
        #expect(whileFull.pullFailures.first?.reason.contains("space") == true, "the reason is the file system's: \(whileFull.pullFailures)")
        disk.free()
        // No restart, no further change: every document arrives.
        #expect(await eventually(timeout: .seconds(30)) { ids.allSatisfy { folder.exists("note/\($0).json") } }, "\(agent.logs.all.suffix(6))")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.inSync() == true })
        try await agent.stop()
        await server.stop()
    }

    /// Regression: agent A's create was stored but its reply lost; B edited the document; A sent
    /// its create again without a base revision and it was stored over B's edit, in both folders.
    @Test func aWriteSentAgainAfterALostReplyDoesNotOverwriteAnotherAgentsEdit() async throws {
        let server = try await TestServer.start()
        let proxy = FaultProxy(upstream: server.url)
        try await proxy.start()
        let folderA = try TempFolder("lost-reply-a")
        let folderB = try TempFolder("lost-reply-b")
        defer { folderA.remove(); folderB.remove() }
        // A's create is stored and its reply cut; after it A hears nothing until B's edit is in.
        proxy.schedule([.dropMidReply])
        proxy.setRule { _, _ in .status(503, message: "held") }
        proxy.setReadFault(.status(503, message: "held"))
        let a = try await TestAgent.start(folder: folderA, endpoint: proxy.url, token: server.token)
        let b = try await TestAgent.start(folder: folderB, endpoint: server.url, token: server.token)
        try folderA.write("note/shared.json", #"{"id":"shared","docType":"note","title":"from A"}"#)
        #expect(await eventually { folderB.exists("note/shared.json") }, "A's create reached the server and B")
        try folderB.write("note/shared.json", #"{"id":"shared","docType":"note","title":"edited by B"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["shared"]?["title"] == .string("edited by B") })
        // A's write goes again before any pull could tell A of B's edit.
        proxy.setRule(nil)
        #expect(await eventually { (try? await AgentStatus.read(root: folderA.path))?.counts.pending == 0 }, "\(a.logs.all.suffix(6))")
        #expect(try await server.api.documents(type: "note")["shared"]?["title"] == .string("edited by B"), "B's edit is kept on the server")
        proxy.setReadFault(nil)
        #expect(await eventually { (try? folderA.read("note/shared.json"))?.contains("edited by B") == true }, "and reaches A")
        #expect(try folderB.read("note/shared.json").contains("edited by B"))
        try await a.stop()
        try await b.stop()
        await proxy.stop()
        await server.stop()
    }

    /// Regression (CrashTests' kill -9 rounds, seed 8616194285535542335): a write whose reply was
    /// lost, then a later edit and the file's deletion, brought the file back. The server's
    /// version was the folder's own lost write, taken for someone else's edit, and an edit beats
    /// a delete. The reference endpoint now says whose the current version is.
    @Test func aDeletionAfterALostReplyOfTheFoldersOwnEditStaysADeletion() async throws {
        let server = try await TestServer.start()
        let proxy = FaultProxy(upstream: server.url)
        try await proxy.start()
        let folder = try TempFolder("own-lost-write")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: proxy.url, token: server.token)
        func stored() async -> JSONObject? { try? await server.api.documents(type: "note")["d"] }
        func local() async -> DocumentRow? { try? await agent.index.read { try $0.document(id: "d") } }
        try folder.write("note/d.json", #"{"id":"d","docType":"note","v":0}"#)
        #expect(await eventually { await stored()?["v"] == .number("0") })
        // v1 is stored and its reply cut; then nothing reaches the server or comes back for a while.
        proxy.schedule([.dropMidReply])
        proxy.setRule { _, _ in .status(503, message: "held") }
        proxy.setReadFault(.status(503, message: "held"))
        try folder.write("note/d.json", #"{"id":"d","docType":"note","v":1}"#)
        #expect(await eventually { await stored()?["v"] == .number("1") })
        try folder.write("note/d.json", #"{"id":"d","docType":"note","v":2}"#)
        #expect(await eventually { await local()?.body.contains(#""v":2"#) == true })
        try folder.remove("note/d.json")
        #expect(await eventually { await local()?.deletedAt != nil })
        proxy.setRule(nil)
        proxy.setReadFault(nil)
        #expect(await eventually { await stored()?["deleted_at"] != nil }, "the deletion reaches the server: \(agent.logs.all.suffix(6))")
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.counts.pending == 0 })
        #expect(!folder.exists("note/d.json"), "the deleted file does not come back")
        #expect(!agent.logs.all.contains { $0.contains("edited on the server; the edit wins") })
        try await agent.stop()
        await proxy.stop()
        await server.stop()
    }

    /// Regression: a `watch` pulling a large set kept running (at a third of a core, every change
    /// failing) long after its folder was removed. Here the watcher is held back, as it is when
    /// its queue is far behind: the pull itself finds the folder gone and the agent stops.
    @Test func aFolderMovedAwayDuringALongPullStopsTheAgent() async throws {
        let server = try await TestServer.start()
        let documents = (0..<3_000).map { #"{"id":"bulk\#($0)","docType":"note","n":\#($0)}"# }
        for chunk in stride(from: 0, to: documents.count, by: 500) {
            let body = #"{"since":0,"documents":[\#(documents[chunk..<chunk + 500].joined(separator: ","))]}"#
            #expect(try await server.api.request("POST", "/api/sync", body: body).status == 200)
        }
        let proxy = FaultProxy(upstream: server.url)
        proxy.setLatency { (request: .zero, reply: .milliseconds(300)) }
        try await proxy.start()
        let folder = try TempFolder("gone-mid-pull")
        let moved = folder.path + "-moved"
        defer { folder.remove(); try? FileManager.default.removeItem(atPath: moved) }
        let agent = try await TestAgent.start(folder: folder, endpoint: proxy.url, token: server.token)
        let ended = Mutex<String?>(nil)
        Task {
            do { try await agent.task.value; ended.withLock { $0 = "no error" } } catch { ended.withLock { $0 = "\(error)" } }
        }
        #expect(await eventually { folder.exists("note/bulk0.json") || folder.exists("note/bulk2999.json") })
        #expect(await agent.agent.setWatcherSuspended(true), "the watcher's thread acts on the switch")
        #expect(rename(folder.path, moved) == 0)
        #expect(await eventually(timeout: .seconds(20)) { ended.withLock { $0 } != nil }, "\(agent.logs.all.suffix(4))")
        #expect(ended.withLock { $0 }?.contains("moved or deleted") == true || ended.withLock { $0 }?.contains("gone") == true, "\(ended.withLock { $0 } ?? "-")")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: moved + "/note"))?.count ?? 0
        #expect(written < 3_000, "the pull stopped part-way (\(written) files)")
        await proxy.stop()
        await server.stop()
    }

    /// Regression: a server answering every write "stale" with yet another current version was
    /// asked ~35 times a second for as long as it did (the file rewritten each time).
    @Test func aServerAnsweringEveryWriteWithAConflictIsAskedWithBackoff() async throws {
        let endpoint = HostileEndpoint()
        let writes = Mutex(0)
        let pulls = Mutex(0)
        endpoint.respond { _, path, body in
            guard path == "/api/sync" else { return nil }
            guard body.contains(#""documents":[{"#) else {
                pulls.withLock { $0 += 1 }
                return .init(body: #"{"documents":{"success":[],"error":[]},"cursor":1}"#)
            }
            let n = writes.withLock { w -> Int in
                w += 1
                return w
            }
            // The create is stored (the two sides agree on a version); every later write meets yet another.
            if n == 1 {
                return .init(body: #"{"documents":{"success":[{"id":"loop","rev":1,"updated_at":"2026-01-01T00:00:00.000Z"}],"error":[]},"cursor":1}"#)
            }
            let current = #"{"id":"loop","docType":"note","v":\#(n),"rev":\#(n + 1),"updated_at":"2026-01-01T00:00:00.000Z"}"#
            return .init(body: #"{"documents":{"success":[],"error":[{"id":"loop","message":"revision \#(n) is not current (current: \#(n + 1))","current":\#(current)}]},"cursor":1}"#)
        }
        try await endpoint.start()
        let folder = try TempFolder("conflict-loop")
        defer { folder.remove() }
        try folder.write("note/loop.json", #"{"id":"loop","docType":"note","v":0}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually {
            guard writes.withLock({ $0 }) >= 1 else { return false }
            return (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0
        })
        try folder.write("note/loop.json", #"{"id":"loop","docType":"note","v":0,"edited":true}"#)
        #expect(await eventually { writes.withLock { $0 } >= 3 })
        let grown = try await growth(over: .seconds(4)) { [writes.withLock { $0 }, pulls.withLock { $0 }] }
        let (moreWrites, morePulls) = (grown[0], grown[1])
        // The test policy backs off 50 ms doubling to 500 ms: about a dozen calls in 4 s.
        #expect(moreWrites <= 25, "\(moreWrites) writes in 4 s")
        #expect(morePulls <= 25, "\(morePulls) pulls in 4 s: long polls answered at once are asked with backoff")
        #expect(agent.logs.count(containing: "writes in a row with a conflict") == 1, "said once")
        #expect(agent.logs.count(containing: "answers long polls at once with nothing new") == 1, "said once")
        // The status says why while the loop goes on (a read just as the merged write is queued
        // again finds that entry with no error yet: seen on a loaded machine).
        let said = Mutex("")
        #expect(await eventually {
            guard let status = try? await AgentStatus.read(root: folder.path) else { return false }
            said.withLock { $0 = status.text(now: 0) }
            return status.lastError?.contains("conflict") == true
        }, "\(said.withLock { $0 })")
        try await agent.stop()
        await endpoint.stop()
    }

    /// Regression: a plain PingPong server that lists a docType as a bare JSON array (as most REST
    /// servers do; the seed names `{"data": …}` for its writes) failed every poll for ever.
    @Test func aListingSentAsABareArrayIsTaken() async throws {
        let endpoint = HostileEndpoint()
        endpoint.respond { _, path, _ in
            switch path {
            case "/api/sync": return .init(status: 404, body: #"{"error":"not found"}"#)
            case "/api/document/type/note":
                return .init(body: #"[{"id":"bare1","docType":"note","title":"bare","rev":1,"updated_at":"2026-01-01T00:00:00.000Z"}]"#)
            default: return nil
            }
        }
        try await endpoint.start()
        let folder = try TempFolder("bare-array")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t") {
            $0.selection = TypeSelection(only: ["note"])
            $0.pollInterval = .milliseconds(200)
        }
        #expect(await eventually { (try? folder.read("note/bare1.json"))?.contains("bare") == true }, "\(agent.logs.all.suffix(5))")
        #expect(agent.logs.count(containing: "pulling failed") == 0)
        try await agent.stop()
        await endpoint.stop()
    }
}
}

/// What is logged of names from outside cannot forge a line.
@Suite struct LogTextTests {
    @Test func controlCharactersAreEscaped() {
        #expect(LogText.escaped("plain name.json") == "plain name.json")
        #expect(LogText.escaped("a\nINFO forged line") == "a\\nINFO forged line")
        #expect(LogText.escaped("x\u{1b}[2Jy\r\t\u{0}") == "x\\u{1b}[2Jy\\r\\t\\u{0}")
        #expect(!LogText.escaped("a\u{2028}b\u{85}c").unicodeScalars.contains { $0 == "\u{2028}" || $0 == "\u{85}" })
    }
}
