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

/// The engine's rules (docs/ARCHITECTURE.md, "The engine's rules") that hold whatever the
/// adapter, each against the case that broke it, on the server in memory and an index in memory.
/// What needs HTTP (a reply lost on the wire, a server that lies) stays in EnginePromisesTests.
extension MemoryEngineTests {
    /// Regression (ConvergenceTests, seed 1461806029286022442): a save that landed between a
    /// pulled change's write and its record was recorded as the pulled version, since the record
    /// read the file back. The save was never sent, and the next pulled change wrote over it.
    @Test func aSaveLandingWhileAPulledChangeIsRecordedIsSentAndKept() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("save-mid-pull")
        defer { folder.remove() }
        let armed = Mutex(false)
        let agent = try await agent(folder, server) { options in
            options.beforeRecordingAPulledWrite = { path in
                guard path == "note/d.json", armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
                // The user's editor saves over the pulled version, adding a field of their own.
                #expect((try? carefulEdit(folder, path) { $0["mine"] = .string("kept") }) != nil)
            }
        }
        try folder.write("note/d.json", #"{"id":"d","docType":"note","title":"first"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "d")) != nil })
        armed.withLock { $0 = true }
        try await put(server, #"{"id":"d","docType":"note","title":"second"}"#)
        let both: @Sendable (JSONObject?) -> Bool = { $0?["title"] == .string("second") && $0?["mine"] == .string("kept") }
        #expect(await eventually(timeout: Self.patience) { both(try? await stored(server, "d")) }, "the save reaches the server: \(agent.logs.all.suffix(6))")
        #expect(await eventually(timeout: Self.patience) { both(try? DocumentRules.parseObject(Array(folder.bytes("note/d.json")))) }, "and stays in the file")
        #expect(!armed.withLock { $0 }, "the save was made between the write and its record")
        try await agent.stop()
    }

    /// Regression (ConvergenceTests, 100 rounds, seed 3526239147733308086): an agent stopped
    /// between creating a page's new files and recording them left files the index did not know
    /// (the record was cancelled with its task). The same run pulled the page again and wrote
    /// each document once more beside the first (`<id>-2.json`); the next start took the first
    /// for a copy and gave it a new id, and the user's edit of it went to a new document.
    @Test func aStopBetweenWritingPulledFilesAndRecordingThemLeavesThemRecorded() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("stop-mid-record")
        defer { folder.remove() }
        let stopped = Mutex(false)
        let agent = try await agent(folder, server) { options in
            // The watcher's news of the new file comes late, as from an agent whose watcher has
            // stopped already: the pull is tried again first.
            (options.settle, options.maxDelay) = (.seconds(3), .seconds(3))
            options.beforeRecordingAPulledWrite = { path in
                guard path == "note/x.json", stopped.withLock({ stopped in defer { stopped = true }; return !stopped }) else { return }
                withUnsafeCurrentTask { $0?.cancel() }  // the stop arrives here
            }
        }
        try await put(server, #"{"id":"x","docType":"note","title":"pulled"}"#)
        #expect(await eventually(timeout: Self.patience) { stopped.withLock { $0 } }, "\(agent.logs.all.suffix(6))")
        #expect(await eventually(timeout: Self.patience) { (try? await agent.index.read { try $0.document(id: "x") })?.path == "note/x.json" }, "\(agent.logs.all.suffix(6))")
        let recorded = try await agent.index.read { tx in (try tx.document(id: "x"), try tx.outboxEntry(key: .document("x"))) }
        #expect(recorded.0?.state == .synced && recorded.0?.serverRev == 1 && recorded.1 == nil, "recorded as pulled, nothing to send")
        #expect(!folder.exists("note/x-2.json"))
        try await agent.stop()
    }

    /// Pulled changes that wait for their files past a pull's tries (the cursor stays, and each
    /// pull tries them again) were only logged: `status` said in sync while the folder was
    /// behind. Here the watcher's news of a move is held back longer than a pull tries (90 s:
    /// the waiting must be seen before it ends, and on a loaded machine a pull's 50 tries took
    /// more than the 40 s this test first held it, in a clean-clone CI run).
    @Test func aPulledChangeWaitingForItsFileIsShownAndTheFolderIsNotCalledInSync() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("pull-waiting")
        defer { folder.remove() }
        try await put(server, #"{"id":"a","docType":"note","title":"first"}"#)
        let agent = try await agent(folder, server) { options in
            (options.settle, options.maxDelay, options.pollInterval) = (.seconds(90), .seconds(90), .seconds(1))
        }
        let index = agent.index
        func status() async -> AgentStatus? { try? await AgentStatus.read(index) }
        #expect(await eventually(timeout: Self.patience) { await status()?.inSync() == true && folder.exists("note/a.json") })
        #expect(mkdir(folder.file("archive"), 0o755) == 0 && rename(folder.file("note/a.json"), folder.file("archive/a.json")) == 0)
        try await put(server, #"{"id":"a","docType":"note","title":"second"}"#)
        #expect(await eventually(timeout: .seconds(85)) { (await status())?.pullWaiting != nil }, "\(agent.logs.all.suffix(4))")
        let waiting = try #require(await status())
        #expect(!waiting.inSync() && waiting.text(now: 0).contains("wait for their files") && waiting.pullWaiting?.contains("a") == true)
        #expect(await eventually(timeout: .seconds(150)) {
            guard await status()?.inSync() == true else { return false }
            return (try? folder.read("archive/a.json"))?.contains("second") == true
        }, "\(agent.logs.all.suffix(4))")
        #expect(await status()?.pullWaiting == nil)
        try await agent.stop()
    }

    /// Regression (ConvergenceTests, seed 4719781550540053962): a file moved while its text
    /// changed but not its content (its members in another order, as a pulled version written in
    /// the file's own order is) left the document at its old path. The move's path was written,
    /// then the old one again with the new text, and every later change from the server waited
    /// for a file that was not there.
    @Test func aMovedFileWhoseTextChangedButNotItsContentTakesTheDocumentWithIt() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("move-reordered")
        defer { folder.remove() }
        var agent = try await agent(folder, server)
        let index = agent.index
        try folder.write("notes/a.json", #"{"id":"a","docType":"note","title":"first","n":1}"#)
        #expect(await eventually(timeout: Self.patience) { (try? await AgentStatus.read(index))?.inSync() == true && folder.exists("notes/a.json") })
        try await agent.stop()
        try folder.write("archive/a.json", #"{"n":1,"title":"first","docType":"note","id":"a"}"#)
        try folder.remove("notes/a.json")
        agent = try await self.agent(folder, server, index: index)
        try await put(server, #"{"id":"a","docType":"note","title":"second","n":1}"#)
        #expect(await eventually(timeout: Self.patience) { (try? folder.read("archive/a.json"))?.contains("second") == true }, "\(agent.logs.all.suffix(6))")
        #expect(!folder.exists("notes/a.json"))
        try await agent.stop()
    }

    /// Regression: an edit made offline to a document deleted meanwhile, whose tombstone was then
    /// purged, never reached the server: every write was answered "not current", the document was
    /// fetched (404) and sent again, thousands of times, with nothing in `status` or the log.
    @Test func anOfflineEditOfADocumentDeletedAndPurgedMeanwhileIsSentAsNew() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("purged-edit")
        defer { folder.remove() }
        try await put(server, #"{"id":"doc1","docType":"note","v":1}"#)
        var agent = try await agent(folder, server)
        let index = agent.index
        #expect(await eventually(timeout: Self.patience) { folder.exists("note/doc1.json") })
        #expect(await eventually(timeout: Self.patience) { (try? await AgentStatus.read(index))?.counts.pending == 0 })
        try await agent.stop()
        try folder.write("note/doc1.json", #"{"id":"doc1","docType":"note","v":2,"offline":true}"#)
        _ = try await server.store.delete(id: "doc1", docType: "note", now: Self.now())
        #expect(try await server.store.purgeTombstones(deletedBefore: Self.now() + 1) == 1, "purged")
        agent = try await self.agent(folder, server, index: index)
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "doc1"))?["offline"] == .bool(true) }, "\(agent.logs.all.suffix(6))")
        #expect(await eventually(timeout: Self.patience) { (try? await AgentStatus.read(index))?.counts.pending == 0 })
        #expect(folder.exists("note/doc1.json"), "an edit beats a delete")
        try await agent.stop()
    }
}
