#if canImport(Glibc)
import Glibc
#endif
import DocsyncAgent
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The engine against a server in memory (`MemoryEndpoint`: the reference endpoint's rules, no
/// HTTP): what agents do to each other's folders, with nothing between them but the rules.
@Suite struct MemoryEngineTests {
    /// How long convergence may take. Alone these folders converge in 2–4 s; beside every other
    /// suite of a full run (the JSON Schema suite and Kinto's among them, on two cores) the same
    /// steps took up to 20 s in CI. What is asserted is that they converge, not how fast.
    static let patience: Duration = .seconds(60)

    func memoryAdapter(_ server: MemoryServer) -> AdapterMaker {
        AdapterMaker { context in server.client(id: context.clientID, credential: context.credential, clock: context.clock) }
    }

    /// An agent on `folder` against `server`, its index in memory: a fresh one, or `index` (the
    /// one a stopped agent had, for a restart); `onDisk` for what tests the index's file itself.
    func agent(
        _ folder: TempFolder, _ server: MemoryServer, index: Index? = nil, onDisk: Bool = false, configure: (inout AgentOptions) -> Void = { _ in }
    ) async throws -> TestAgent {
        let index = onDisk ? nil : try index ?? Index.inMemory()
        return try await TestAgent.start(folder: folder, endpoint: "memory:", token: server.token, adapter: memoryAdapter(server), index: index) {
            $0.pollInterval = .milliseconds(50)
            configure(&$0)
        }
    }

    /// Two folders on one server: a create, an edit on the other side, concurrent edits of
    /// different fields merged, and a deletion, each arriving in the other folder.
    @Test func twoFoldersConvergeThroughAServerInMemory() async throws {
        let server = MemoryServer()
        let (a, b) = (try TempFolder("memory-a"), try TempFolder("memory-b"))
        defer { a.remove(); b.remove() }
        let agentA = try await agent(a, server)
        let agentB = try await agent(b, server)
        try a.write("notes/n.json", #"{"id":"n","docType":"note","title":"first","body":"x"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? b.read("note/n.json"))?.contains("first") == true }, "\(agentB.logs.all.suffix(4))")

        try b.write("note/n.json", #"{"id":"n","docType":"note","title":"second","body":"x"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? a.read("notes/n.json"))?.contains("second") == true }, "\(agentA.logs.all.suffix(4))")

        try a.write("notes/n.json", #"{"id":"n","docType":"note","title":"second","body":"from a"}"#)
        try b.write("note/n.json", #"{"id":"n","docType":"note","title":"from b","body":"x"}"#)
        let merged: @Sendable (String) -> Bool = { $0.contains("from a") && $0.contains("from b") }
        #expect(await eventually(timeout: Self.patience) {
            ((try? a.read("notes/n.json")).map(merged) ?? false) && ((try? b.read("note/n.json")).map(merged) ?? false)
        }, "a: \((try? a.read("notes/n.json")) ?? "-") b: \((try? b.read("note/n.json")) ?? "-")")

        try a.remove("notes/n.json")
        #expect(await eventually(timeout: Self.patience) { !b.exists("note/n.json") }, "\(agentB.logs.all.suffix(4))")
        #expect(!a.exists(".docsync/index.sqlite") && !b.exists(".docsync/index.sqlite"), "both indexes were in memory")
        try await agentA.stop()
        try await agentB.stop()
    }

    /// An idle folder's pulls that find nothing new touch no index: a lean index (hundreds of
    /// folders in one process), closed once idle, stays closed while its agent pulls again and
    /// again; a change from the server opens it and arrives.
    @Test func anIdleFoldersPullsLeaveItsClosedIndexClosed() async throws {
        let server = MemoryServer()
        let (a, b) = (try TempFolder("quiet-a"), try TempFolder("quiet-b"))
        defer { a.remove(); b.remove() }
        // The retry of failed pulled changes looks at the index every `cap` when it has none: a
        // minute by default, here longer than the test.
        let agentA = try await agent(a, server, onDisk: true) {
            $0.indexFootprint = .lean
            $0.retryPolicy = RetryPolicy(initial: .milliseconds(50), cap: .seconds(60))
        }
        let agentB = try await agent(b, server)
        try a.write("notes/n.json", #"{"id":"n","docType":"note","title":"first"}"#)
        #expect(await eventually(timeout: Self.patience) { b.exists("note/n.json") }, "\(agentB.logs.all.suffix(4))")
        let index = agentA.agent.index
        // Once the agent has settled (its acknowledgements written), a closed index stays closed
        // over 20 more pulls (both agents pull every 50 ms). Before, every pull opened it again.
        #expect(await eventually(timeout: Self.patience) {
            await index.releaseMemory()
            let (pulls, deadline) = (server.pulls, ContinuousClock.now + .seconds(5))
            while server.pulls < pulls + 20 && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
            return !index.holdsConnection
        }, "pulls that found nothing opened the index")

        try b.write("note/n.json", #"{"id":"n","docType":"note","title":"second"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? a.read("notes/n.json"))?.contains("second") == true }, "\(agentA.logs.all.suffix(4))")
        try await agentA.stop()
        try await agentB.stop()
    }

    /// The retry of failed pulled changes looks at the index on its timer only when the index may
    /// have changed since its last look found nothing: a closed lean index stays closed over many
    /// of its periods, and a write from another process (as `docsync resolve` makes) has it look.
    @Test func anIdleFoldersRetryLoopLeavesItsClosedIndexClosed() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("retry-idle")
        defer { folder.remove() }
        let agentA = try await agent(folder, server, onDisk: true) {
            $0.indexFootprint = .lean
            $0.retryPolicy = RetryPolicy(initial: .milliseconds(50), cap: .milliseconds(100))
        }
        let index = agentA.agent.index
        // Over a second, ten or more of the loop's periods.
        #expect(await eventually(timeout: Self.patience) {
            await index.releaseMemory()
            try? await Task.sleep(for: .seconds(1))
            return !index.holdsConnection
        }, "the retry loop opened the idle index")

        let other = try Index.open(root: folder.path)
        try await other.write { try $0.setMeta(.pullError, "written by another process") }
        #expect(await eventually(timeout: Self.patience) { index.holdsConnection }, "a write from outside was not looked at")
        try await agentA.stop()
    }

    /// A catch-up asks for each page once, the next while it writes this one (`Puller+Ahead`):
    /// every document lands, and no page asked ahead is thrown away and asked again.
    @Test func aCatchUpAsksForEachPageOnceAndWritesThemAll() async throws {
        let server = MemoryServer()
        let count = server.pageSize * 3 + server.pageSize / 2
        for i in 0..<count {
            let doc = try DocumentRules.parseObject(Array(#"{"id":"d\#(i)","docType":"bulk","n":\#(i)}"#.utf8))
            _ = try await server.store.put(doc, now: 1, ifMatch: nil, mustCreate: false, client: nil)
        }
        let folder = try TempFolder("catch-up")
        defer { folder.remove() }
        let agent = try Agent(
            options: AgentOptions(root: folder.path, endpointURL: "memory:", token: server.token),
            endpoint: { server.client(id: $0.clientID, credential: $0.credential, clock: $0.clock) }, index: .inMemory(), logger: CapturedLogs().logger())
        let report = try await agent.syncOnce()
        #expect(report.complete, "\(report)")
        #expect(TreeWalkerProbe.documents(in: folder.path).count == count)
        let pages = (count + server.pageSize - 1) / server.pageSize
        #expect(server.pulls <= pages + 1, "\(server.pulls) pulls for \(pages) pages")
    }

    /// A pulled file edited in place at once (the same size and inode, so only its content tells)
    /// reaches the server: the applier records it from what it wrote, unsettled, and whichever
    /// reads it next (the watcher's scan or the settler) finds the edit.
    @Test func anEditInPlaceRightAfterAPullIsPushed() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("edit-after-pull")
        defer { folder.remove() }
        let agentB = try await agent(folder, server)
        try await put(server, #"{"id":"n","docType":"note","v":"aaaa"}"#)
        #expect(await eventually(timeout: Self.patience, every: .milliseconds(1)) { folder.exists("note/n.json") })
        try await editInPlaceReachesTheServer(folder, server, agentB)
    }

    /// A document that changed long before it is pulled is written carrying that time, as sync
    /// tools carry a file's time across; its stat is recorded as written, settled, so nothing
    /// reads it again. An edit in place of the same size is still seen: a write stamps its own
    /// time.
    @Test func aPulledFileCarriesItsDocumentsTimeAndAnEditInPlaceIsStillSeen() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("dated-pull")
        defer { folder.remove() }
        let agentB = try await agent(folder, server)
        try await put(server, #"{"id":"n","docType":"note","v":"aaaa","updated_at":"2026-01-02T03:04:05.678Z"}"#)
        #expect(await eventually(timeout: Self.patience, every: .milliseconds(1)) { folder.exists("note/n.json") })
        let info = try #require(FileSystem.info(folder.file("note/n.json")))
        #expect(info.mtimeNs == 1_767_323_045_678_000_000)
        #expect(await eventually(timeout: Self.patience) { (try? await agentB.row("note/n.json"))??.stat == FileStat(size: info.size, mtimeNs: info.mtimeNs, inode: info.inode) })
        try await editInPlaceReachesTheServer(folder, server, agentB)
    }

    /// A pulled file arrives whole: a tool watching the folder sees its final name appear once
    /// (renamed in from the state folder), never a temporary being written; nothing is left in
    /// the staging folders, and a killed agent's temporaries there are removed at the next start.
    @Test func aPulledFileArrivesWholeAndTheStagingFolderIsKeptClean() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("staged-pull")
        defer { folder.remove() }
        // pid 2^22 + 1: above Linux's limit, so gone
        let stale = [".docsync/staging/.x.json.docsync-4194305-1.tmp", ".docsync/staging-2/.y.json.docsync-4194305-2.tmp"]
        for path in stale { try folder.write(path, "{}") }
        try FileManager.default.createDirectory(atPath: folder.file("note"), withIntermediateDirectories: true)
        let watcher = try NameWatcher(folder.file("note"))
        let agentB = try await agent(folder, server)
        try await put(server, #"{"id":"n","docType":"note","v":"aaaa"}"#)
        #expect(await eventually(timeout: Self.patience, every: .milliseconds(1)) { folder.exists("note/n.json") })
        #expect(watcher.names() == ["n.json"], "only the final name was ever seen in the folder")
        for path in stale { #expect(!folder.exists(path), "a dead agent's temporary is removed: \(path)") }
        for path in [".docsync/staging", ".docsync/staging-2"] {
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file(path)).isEmpty)
        }
        try await agentB.stop()
    }

    /// A pulled document whose own name is taken by a file the index has no row for (one the
    /// user asked to be ignored) is written at the next free name; the file there is left alone.
    @Test func aPulledDocumentWhoseNameIsTakenByAnUnindexedFileGetsTheNextName() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("taken-unindexed")
        defer { folder.remove() }
        try folder.write(".docsyncignore", "note/n.json\n")
        try folder.write("note/n.json", "mine, not a document")
        let agentB = try await agent(folder, server)
        try await put(server, #"{"id":"n","docType":"note","v":"from the server"}"#)
        #expect(await eventually(timeout: Self.patience) { folder.exists("note/n-2.json") }, "\(agentB.logs.all.suffix(4))")
        #expect(try folder.read("note/n-2.json").contains("from the server"))
        #expect(try folder.read("note/n.json") == "mine, not a document")
        #expect(await eventually(timeout: Self.patience) { (try? await agentB.row("note/n-2.json")) != nil })
        try await agentB.stop()
    }

    /// Edits `note/n.json` in place ("aaaa" to "bbbb": the same size and inode), expects the
    /// server to receive it, and stops the agent.
    func editInPlaceReachesTheServer(_ folder: TempFolder, _ server: MemoryServer, _ agent: TestAgent) async throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: folder.file("note/n.json")))
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: Data(text.replacingOccurrences(of: "aaaa", with: "bbbb").utf8))
        try handle.close()
        #expect(await eventually(timeout: Self.patience) { (try? await server.store.get(id: "n"))?.object?["v"]?.string == "bbbb" },
                "\(agent.logs.all.suffix(4))")
        try await agent.stop()
    }
}

/// The names that appear in one folder (created, moved in, written), by inotify.
struct NameWatcher: ~Copyable {
    let fd: Int32

    init(_ path: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, path, UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY)) >= 0 else {
            throw FileSystemError("inotify", path: path)
        }
    }

    deinit { close(fd) }

    /// Every distinct name seen so far, in the order first seen.
    func names() -> [String] {
        var seen: [String] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return seen }
            var offset = 0
            while offset + 16 <= n {
                let length = buffer.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)) }
                let name = String(decoding: buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }, as: UTF8.self)
                if !seen.contains(name) { seen.append(name) }
                offset += 16 + length
            }
        }
    }
}
