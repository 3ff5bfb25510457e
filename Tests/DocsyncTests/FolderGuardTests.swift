#if canImport(Glibc)
import Glibc
#endif
@testable import DocsyncAgent
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// The folder as the agent's to guard: one agent per folder, a folder replaced under it, a disk
/// that fills (issue 21, findings 8, 11 and 12).
extension HeavySuites {
@Suite(.serialized) struct FolderGuardTests {
    /// A second `docsync watch` on a watched folder used to run beside the first, both racing on
    /// every file and both pushing and pulling.
    @Test func aSecondAgentOnTheSameFolderRefusesNamingTheFirst() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("one-agent")
        defer { folder.remove() }
        let first = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["a"] != nil })
        let second = try Agent(options: AgentOptions(root: folder.path, endpointURL: server.url, token: server.token), endpoint: pingPong(server.url), logger: CapturedLogs().logger())
        await #expect { try await second.run() } throws: { error in
            "\(error)".contains("another docsync (pid \(getpid())) is already syncing \(folder.path)")
        }
        await #expect(throws: (any Error).self) { try await second.syncOnce() }
        try await first.stop()
        // Once the first has stopped, the folder is free again.
        let report = try await second.syncOnce()
        #expect(report.complete)
        await server.stop()
    }

    /// `rm -rf docs && git clone … docs` (or a move) under a running agent: it went on, logged
    /// nothing, and synced neither folder.
    @Test func aFolderMovedAwayStopsTheAgentLoudly() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("replaced")
        defer { folder.remove(); try? FileManager.default.removeItem(atPath: folder.path + "-moved") }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["a"] != nil })
        #expect(rename(folder.path, folder.path + "-moved") == 0)
        #expect(mkdir(folder.path, 0o755) == 0)
        let outcome = await Self.outcome(of: agent.task, within: .seconds(10))
        #expect(outcome.map { "\($0)" }?.contains("was moved away or deleted") == true, "\(String(describing: outcome))")
        #expect(agent.logs.count(containing: "moved away or deleted") >= 1)
        await server.stop()
    }

    /// How `task` ended, if it ends within `limit`: its error, or "finished".
    static func outcome(of task: Task<Void, any Error>, within limit: Duration) async -> String? {
        let result = Mutex<String?>(nil)
        let watcher = Task.detached {
            do {
                try await task.value
                result.withLock { $0 = "finished" }
            } catch {
                result.withLock { $0 = "\(error)" }
            }
        }
        _ = await eventually(timeout: limit) { result.withLock { $0 } != nil }
        _ = watcher
        return result.withLock { $0 }
    }

    /// With a low inotify limit, the message quoted the system-wide sysctl, changes under the
    /// folders left without a watch were never synced, and `status` said nothing.
    @Test func foldersWithoutAWatchAreRescannedAndCounted() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("watch-limit")
        defer { folder.remove() }
        for i in 0..<6 { try folder.write("t\(i)/sub/seed.json", #"{"id":"seed\#(i)","docType":"t"}"#) }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) {
            $0.watchLimit = 4
            $0.unwatchedRescan = .milliseconds(300)
        }
        #expect(await eventually { (try? await server.api.documents(type: "t"))?.count == 6 })
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.unwatchedFolders ?? 0 > 0 })
        let line = agent.logs.all.first { $0.contains("inotify watch limit reached") } ?? ""
        #expect(line.contains("after 4 watches") && line.contains("max_user_watches"), "\(line)")
        for i in 0..<6 { try folder.write("t\(i)/sub/later.json", #"{"id":"later\#(i)","docType":"t"}"#) }
        #expect(await eventually { (try? await server.api.documents(type: "t"))?.count == 12 }, "every folder's change arrives, watched or not")
        let text = try await AgentStatus.read(root: folder.path).text(now: 0)
        #expect(text.contains("have no inotify watch"))
        try await agent.stop()
        await server.stop()
    }

    /// Regression: with `.docsync` a symlink, every server deletion failed ("refusing to write
    /// through a symlink") while `status` said synced.
    @Test func aStateFolderThatIsASymlinkIsRefusedAtStart() async throws {
        let folder = try TempFolder("state-link")
        let elsewhere = try TempFolder("state-elsewhere")
        defer { folder.remove(); elsewhere.remove() }
        #expect(symlink(elsewhere.path, folder.file(".docsync")) == 0)
        #expect {
            _ = try Agent(options: AgentOptions(root: folder.path, endpointURL: "http://127.0.0.1:9", token: "t"), endpoint: pingPong("http://127.0.0.1:9"), logger: CapturedLogs().logger())
        } throws: { "\($0)".contains(".docsync is a symlink") }
        // A part of it likewise.
        try FileManager.default.removeItem(atPath: folder.file(".docsync"))
        try FileManager.default.createDirectory(atPath: folder.file(".docsync"), withIntermediateDirectories: true)
        #expect(symlink(elsewhere.path, folder.file(".docsync/trash")) == 0)
        #expect {
            _ = try Agent(options: AgentOptions(root: folder.path, endpointURL: "http://127.0.0.1:9", token: "t"), endpoint: pingPong("http://127.0.0.1:9"), logger: CapturedLogs().logger())
        } throws: { "\($0)".contains("trash is a symlink") }
    }

    /// Regression: a symlinked folder was refused as "Not a directory", and a missing token file
    /// printed a Foundation error dump.
    @Test func aSymlinkedFolderAndAMissingTokenFileAreSaidPlainly() throws {
        let target = try TempFolder("link-target")
        defer { target.remove() }
        let link = target.path + "-link"
        #expect(symlink(target.path, link) == 0)
        defer { unlink(link) }
        #expect {
            _ = try Agent(options: AgentOptions(root: link, endpointURL: "http://127.0.0.1:9", token: "t"), endpoint: pingPong("http://127.0.0.1:9"), logger: CapturedLogs().logger())
        } throws: { "\($0)" == "\(link) is a symlink: give docsync the folder it points to" }
        #expect {
            _ = try readToken(file: target.path + "/no-such-token")
        } throws: { "\($0)" == "read token from \(target.path)/no-such-token: No such file or directory" }
    }

    /// The folder's disk filled during a scan: files written meanwhile were never pushed, not
    /// after space was freed nor after a later change, and `status` showed 0 pending.
    @Test func filesWrittenWhileTheDiskWasFullArePushedOnceSpaceIsFreed() async throws {
        let mount = try TempFolder("tmpfs")
        defer { mount.remove() }
        guard let disk = SmallDisk(at: mount.path, size: "3m") else {
            Issue.record("cannot mount a tmpfs here (needs root); the disk-full test did not run")
            return
        }
        defer { disk.unmount() }
        let server = try await TestServer.start()
        let root = mount.path + "/docs"
        #expect(mkdir(root, 0o755) == 0)
        let folder = TempFolder(existing: root)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("notes/first.json", #"{"id":"first","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["first"] != nil })
        // The user's files are made first, beside the folder on the same disk; then the disk is
        // filled but for a little, and they are moved in (a rename takes no room): no room left
        // for the index's log. (Written after the fill, they raced the agent's own writes for
        // the room left, and now and then the user's write was the one refused.)
        let staged = mount.path + "/staged"
        #expect(mkdir(staged, 0o755) == 0)
        let pad = String(repeating: "x", count: 7_000)
        for i in 0..<20 {
            try #"{"id":"full\#(i)","docType":"note","pad":"\#(pad)"}"#.write(toFile: staged + "/full-\(i).json", atomically: false, encoding: .utf8)
        }
        disk.fill(leaving: 40 << 10, name: "filler")
        for i in 0..<20 { #expect(rename(staged + "/full-\(i).json", folder.file("notes/full-\(i).json")) == 0) }
        #expect(await eventually { agent.logs.count(containing: "scan failed") > 0 }, "the disk-full failure was met")
        disk.free(name: "filler")
        // No further change: the agent finds the files by itself.
        #expect(await eventually(timeout: .seconds(30)) { (try? await server.api.documents(type: "note"))?.count == 21 })
        #expect(await eventually { (try? await AgentStatus.read(root: root))?.scanError == nil })
        try await agent.stop()
        await server.stop()
    }
}
}
