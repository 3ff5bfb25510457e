import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Testing

/// Real inotify on real temp folders, with the agent and the reference endpoint in this process:
/// each case ends with the index and the server in the state a user expects.
extension HeavySuites {
@Suite(.serialized) struct WatcherTests {
    /// Runs `body` with a server and an agent watching a fresh folder (after `prepare`).
    func withAgent(prepare: (TempFolder) throws -> Void = { _ in }, _ body: (TempFolder, TestAgent, TestServer) async throws -> Void) async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("watch")
        try prepare(folder)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        do {
            try await body(folder, agent, server)
        } catch {
            try? await agent.stop()
            await server.stop()
            folder.remove()
            throw error
        }
        try await agent.stop()
        await server.stop()
        folder.remove()
    }

    @Test func createdFileIsIndexedWithAnIDAndPushed() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/hello.json", #"{"docType":"note","title":"hello"}"#)
            #expect(try await agent.settled())
            let id = try #require(try idOf(folder, "notes/hello.json"))
            let row = try #require(try await agent.row("notes/hello.json"))
            #expect(row.docID == id && row.docType == "note" && row.state == .ok)
            let docs = try await server.api.documents(type: "note")
            #expect(docs[id]?["title"] == "hello")
        }
    }

    /// A file already in the wire form reuses its content hash as the body's; a pretty one, or one
    /// whose docType comes from its folder, is hashed as sent. Either way the body hash is what
    /// decides whether a save changed the document: re-indenting a file sends nothing.
    @Test func bodyHashIsTheHashOfTheBodySentWhateverTheFileLooksLike() async throws {
        try await withAgent(prepare: { folder in
            try folder.write("note/compact.json", #"{"id":"c1","docType":"note","n":1}"#)
            try folder.write("note/pretty.json", "{\n  \"id\": \"p1\",\n  \"docType\": \"note\",\n  \"n\": 1\n}\n")
            try folder.write("note/typeless.json", #"{"id":"t1","n":1}"#)
            // Compact but for the newline an editor adds; compact with an escape the writer writes
            // otherwise; compact with a stamp of its own, which the wire form leaves out.
            try folder.write("note/newline.json", #"{"id":"l1","docType":"note","n":1}"# + "\n")
            try folder.write("note/escaped.json", #"{"id":"e1","docType":"note","s":"caf\u00e9"}"#)
            try folder.write("note/stamped.json", #"{"id":"s1","docType":"note","updated_at":"2020-01-01T00:00:00Z"}"#)
        }) { folder, agent, server in
            #expect(try await agent.settled())
            let docs = try await server.api.documents(type: "note")
            let ids = ["c1", "p1", "t1", "l1", "e1", "s1"]
            #expect(Set(docs.keys) == Set(ids))
            let rows = try await agent.index.read { tx in try ids.map { try #require(try tx.document(id: $0)) } }
            for row in rows {
                #expect(row.bodyHash == ContentHash.sha256Hex(row.body.utf8), "\(row.id): the body hash is the hash of the body")
            }
            #expect(rows.map(\.body) == [
                #"{"id":"c1","docType":"note","n":1}"#, #"{"id":"p1","docType":"note","n":1}"#, #"{"id":"t1","n":1,"docType":"note"}"#,
                #"{"id":"l1","docType":"note","n":1}"#, #"{"id":"e1","docType":"note","s":"café"}"#, #"{"id":"s1","docType":"note"}"#,
            ])
            // The compact file rewritten pretty: the same document, nothing to send.
            try folder.write("note/compact.json", "{\n  \"id\": \"c1\",\n  \"docType\": \"note\",\n  \"n\": 1\n}\n")
            #expect(try await agent.settled())
            #expect(try await agent.row("note/compact.json")?.hash == ContentHash.sha256Hex(Array(try folder.read("note/compact.json").utf8)))
            try folder.write("note/marker.json", #"{"id":"m1","docType":"note"}"#)
            #expect(try await eventually { try await server.api.documents(type: "note")["m1"] != nil })
            #expect(try await server.api.documents(type: "note")["c1"]?["rev"] == .number("1"))
        }
    }

    @Test func editInPlaceIsOneUpdate() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":1}"#)
            #expect(try await agent.settled())
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":2}"#)
            #expect(try await eventually { try await server.api.documents(type: "note")["a1"]?["n"] == .number("2") })
            #expect(try await server.api.documents(type: "note")["a1"]?["rev"] == .number("2"))
        }
    }

    @Test func tempFileAndRenameSaveIsOneChangeOfTheRealFile() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":1}"#)
            #expect(try await agent.settled())
            try folder.write("notes/.a.json.tmp123", #"{"id":"a1","docType":"note","n":2}"#)
            try folder.move("notes/.a.json.tmp123", "notes/a.json")
            #expect(try await eventually { try await server.api.documents(type: "note")["a1"]?["n"] == .number("2") })
            #expect(try await agent.settled())
            let doc = try #require(try await server.api.documents(type: "note")["a1"])
            #expect(doc["rev"] == .number("2"))
            #expect(doc["deleted_at"] == nil)
        }
    }

    /// The same size, inode and mtime after a save: what a kernel stamping files from a coarse
    /// clock leaves for two saves within one tick. A file dated in the future (another machine's
    /// clock) makes it reproducible: its stat was recorded too close to its mtime to be trusted.
    @Test func aSaveThatLeavesTheStatAsItWasIsStillSeen() async throws {
        try await withAgent { folder, agent, server in
            let future = timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)
            func stamp(_ path: String) { _ = [future, future].withUnsafeBufferPointer { utimensat(AT_FDCWD, folder.file(path), $0.baseAddress, 0) } }
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":1}"#)
            stamp("notes/a.json")
            #expect(try await eventually { try await server.api.documents(type: "note")["a1"]?["n"] == .number("1") })
            #expect(try await agent.settled())
            let before = try #require(FileSystem.info(folder.file("notes/a.json")))
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":2}"#)
            stamp("notes/a.json")
            #expect(FileSystem.info(folder.file("notes/a.json")) == before, "size, inode and mtime as they were")
            #expect(try await eventually { try await server.api.documents(type: "note")["a1"]?["n"] == .number("2") })
        }
    }

    @Test func vimStyleSaveIsOneChange() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":1}"#)
            try folder.write("notes/.a.json.swp", "vim swap")
            #expect(try await agent.settled())
            // vim with 'backupcopy=no': probe file 4913, original renamed to a backup, new file
            // written under the real name, backup removed.
            try folder.write("notes/4913", "")
            try folder.remove("notes/4913")
            try folder.move("notes/a.json", "notes/a.json~")
            try folder.write("notes/a.json", #"{"id":"a1","docType":"note","n":2}"#)
            try folder.remove("notes/a.json~")
            #expect(try await eventually { try await server.api.documents(type: "note")["a1"]?["n"] == .number("2") })
            #expect(try await agent.settled())
            let doc = try #require(try await server.api.documents(type: "note")["a1"])
            #expect(doc["rev"] == .number("2"), "one write, no tombstone in between")
            #expect(doc["deleted_at"] == nil)
            #expect(try await server.api.documents(type: "note").count == 1)
        }
    }

    @Test func moveAcrossFoldersKeepsTheIdentity() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/a.json", #"{"docType":"note","n":1}"#)
            #expect(try await agent.settled())
            let id = try #require(try idOf(folder, "notes/a.json"))
            try folder.move("notes/a.json", "archive/2026/a.json")
            #expect(try await eventually { try await agent.row("archive/2026/a.json")?.docID == id })
            #expect(try await agent.settled())
            #expect(try await agent.row("notes/a.json") == nil)
            let doc = try #require(try await server.api.documents(type: "note")[id])
            #expect(doc["deleted_at"] == nil)
            #expect(doc["rev"] == .number("1"), "a move of unchanged content is not a write")
        }
    }

    @Test func folderRenameMovesEveryFileInside() async throws {
        try await withAgent(prepare: { folder in
            for i in 0..<5 { try folder.write("projects/alpha/doc\(i).json", #"{"docType":"project","i":\#(i)}"#) }
            try folder.write("projects/alpha/sub/deep.json", #"{"docType":"project","deep":true}"#)
        }) { folder, agent, server in
            #expect(try await agent.settled())
            var ids: [String: String] = [:]
            for i in 0..<5 { ids["doc\(i).json"] = try idOf(folder, "projects/alpha/doc\(i).json") }
            ids["sub/deep.json"] = try idOf(folder, "projects/alpha/sub/deep.json")
            try folder.move("projects/alpha", "projects/beta")
            #expect(try await agent.settled())
            for (name, id) in ids {
                #expect(try await agent.row("projects/beta/\(name)")?.docID == id)
            }
            // Files created in the renamed folder afterwards are seen under its new name.
            try folder.write("projects/beta/sub/new.json", #"{"docType":"project"}"#)
            #expect(try await eventually { try await agent.row("projects/beta/sub/new.json") != nil })
            #expect(try await agent.settled())
            let docs = try await server.api.documents(type: "project")
            #expect(docs.count == 7)
            #expect(docs.values.allSatisfy { $0["deleted_at"] == nil })
        }
    }

    @Test func newNestedFoldersAreWatchedAndScanned() async throws {
        try await withAgent { folder, agent, _ in
            try FileManager.default.createDirectory(atPath: folder.file("a/b/c"), withIntermediateDirectories: true)
            try folder.write("a/b/c/x.json", #"{"v":1}"#)
            #expect(try await eventually { try await agent.row("a/b/c/x.json")?.docType == "a" })
            try folder.write("a/b/c/x.json", #"{"v":2}"#)
            #expect(try await agent.settled())
            let row = try #require(try await agent.row("a/b/c/x.json"))
            let doc = try await agent.index.read { try $0.document(id: row.docID!) }
            #expect(doc?.body.contains("\"v\":2") == true)
        }
    }

    @Test func deleteSendsATombstone() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/a.json", #"{"id":"gone","docType":"note"}"#)
            #expect(try await agent.settled())
            try folder.remove("notes/a.json")
            #expect(try await eventually { try await server.api.documents(type: "note")["gone"]?["deleted_at"] != nil })
            let stamp = try #require(try await server.api.documents(type: "note")["gone"]?["deleted_at"]?.string)
            #expect(Timestamp(rfc3339: stamp) != nil)
            #expect(try await agent.row("notes/a.json") == nil)
        }
    }

    @Test func aCopiedFileGetsAFreshID() async throws {
        try await withAgent { folder, agent, server in
            try folder.write("notes/a.json", #"{"id":"orig","docType":"note"}"#)
            #expect(try await agent.settled())
            try FileManager.default.copyItem(atPath: folder.file("notes/a.json"), toPath: folder.file("notes/b.json"))
            #expect(try await eventually { try idOf(folder, "notes/b.json") != "orig" })
            #expect(try idOf(folder, "notes/a.json") == "orig")
            #expect(try await agent.settled())
            #expect(try await server.api.documents(type: "note").count == 2)
        }
    }

    @Test func docsyncignoreKeepsFilesLocal() async throws {
        try await withAgent(prepare: { folder in
            try folder.write(".docsyncignore", "drafts/\n*.local.json\n")
            try folder.write("drafts/wip.json", #"{"docType":"note","wip":true}"#)
        }) { folder, agent, server in
            try folder.write("notes/a.json", #"{"docType":"note"}"#)
            try folder.write("notes/mine.local.json", #"{"docType":"note","secret":true}"#)
            try folder.write("drafts/later.json", #"{"docType":"note"}"#)
            try folder.write("notes/b.json", #"{"docType":"note"}"#)
            #expect(try await eventually {
                let a = try await agent.row("notes/a.json"), b = try await agent.row("notes/b.json")
                let pending = try await agent.index.read { try $0.pendingCount() }
                return a != nil && b != nil && pending == 0
            })
            // Everything the agent was going to send is sent: the ignored files are not among it.
            #expect(try await server.api.documents(type: "note").count == 2)
            #expect(try await agent.row("drafts/wip.json") == nil)
            #expect(try await agent.row("notes/mine.local.json") == nil)
            #expect(try folder.read("drafts/later.json") == #"{"docType":"note"}"#, "ignored files are never modified")
        }
    }

    @Test func burstThatOverflowsTheKernelQueueEndsComplete() async throws {
        try await withAgent { folder, agent, server in
            try FileManager.default.createDirectory(atPath: folder.file("burst"), withIntermediateDirectories: true)
            #expect(try await agent.settled())
            // Settled can be said before the run has started its watcher (an empty folder waits
            // for nothing): the switch is tried until there is one, and its thread acts on it.
            #expect(await eventually { await agent.agent.setWatcherSuspended(true) }, "the watcher's thread acts on the switch")
            let limit = Int((try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 16384
            let count = max(20_000, limit + 1000)
            // With ids already in them: the rescan after the overflow is what is shown here, not
            // writing 20,000 ids back (which took most of this test's time).
            for i in 0..<count {
                try Data(#"{"id":"b\#(i)","docType":"burst","i":\#(i)}"#.utf8).write(to: folder.url("burst/f\(i).json"))
            }
            #expect(await agent.agent.setWatcherSuspended(false), "the watcher's thread acts on the switch")
            #expect(await eventually(timeout: .seconds(240)) { agent.logs.count(containing: "queue overflowed") >= 1 })
            #expect(try await agent.settled(timeout: .seconds(240)))
            let rows = try await agent.index.read { try $0.allFileStats() }
            #expect(rows.count == count)
            let docs = try await server.api.documents(type: "burst")
            #expect(docs.count == count)
        }
    }
}
}
