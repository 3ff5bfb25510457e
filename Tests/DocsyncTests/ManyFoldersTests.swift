import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// A config of more folders than the kernel's default 128 inotify instances a user, in one
/// `docsync watch` (the real binary); with one instance per folder `watch` exited after 4 s. The
/// folders now share one instance and one watcher thread. With 500 folders the index reads of
/// every folder waited for a reader on a thread each, until libdispatch had no thread left and
/// no folder made its first scan; they now wait suspended (`Permits`). Once idle, most folders
/// hold their index closed. `DOCSYNC_MANY_FOLDERS` sets another count.
extension HeavySuites {
@Suite(.serialized) struct ManyFoldersTests {
    static let folders = ProcessInfo.processInfo.environment["DOCSYNC_MANY_FOLDERS"].flatMap(Int.init) ?? 500

    @Test func moreFoldersThanInotifyInstancesShareOneInstanceAndAllSync() async throws {
        let s = try await EndToEndTests.Setup.start()
        let work = try TempFolder("many")
        var config = "log_level: warning\nfolders:\n"
        for i in 0..<Self.folders {
            try work.write("f\(i)/notes/a.json", #"{"docType":"t\#(i)","n":1}"#)
            config += "  - {name: f\(i), path: \(work.file("f\(i)")), endpoint: \"\(s.url)\", token_file: \(s.tokenFile), types: [t\(i)]}\n"
        }
        try work.write("docsync.yaml", config)
        let agent = try DocsyncProcess(["watch", "--config", work.file("docsync.yaml")], logDirectory: work.path, name: "watch")
        defer { Task { await agent.stop(); await s.finish(); work.remove() } }

        // While every folder is busy at once (the first sync), the process holds a bounded number
        // of indexes open; it held all 500 before.
        let mostOpen = Mutex(0)
        #expect(await eventually(timeout: .seconds(240), every: .milliseconds(500)) {
            let open = Self.indexDescriptors(pid: agent.pid)
            mostOpen.withLock { $0 = max($0, open) }
            return (try? await s.api.request("GET", "/api/stats").json?.object?["data"]?.object?["documents"]) == .number(String(Self.folders))
        }, "\(agent.stderr.suffix(2_000))")
        print("many folders: at most \(mostOpen.withLock { $0 }) descriptors on index files at once")
        #expect(mostOpen.withLock { $0 } < Self.folders / 2, "\(mostOpen.withLock { $0 }) index files open at once")
        #expect(agent.isRunning, "\(agent.stderr.suffix(2_000))")
        let inotify = openFiles(pid: agent.pid).filter { $0 == "anon_inode:inotify" }
        #expect(inotify.count == 1, "one instance for every folder")

        // The first and the last folder still follow their server and their files.
        for i in [0, Self.folders - 1] {
            #expect(try await s.api.request("PUT", "/api/document", body: #"{"id":"from-server-\#(i)","docType":"t\#(i)"}"#).status == 200)
        }
        #expect(await eventually(timeout: .seconds(60)) {
            work.exists("f0/t0/from-server-0.json") && work.exists("f\(Self.folders - 1)/t\(Self.folders - 1)/from-server-\(Self.folders - 1).json")
        }, "\(agent.stderr.suffix(2_000))")
        try work.write("f\(Self.folders - 1)/notes/b.json", #"{"docType":"t\#(Self.folders - 1)","n":2}"#)
        #expect(await eventually(timeout: .seconds(60)) { (try? await s.api.documents(type: "t\(Self.folders - 1)"))?.count == 3 })

        // Idle folders close their index (it is opened again at their next pull or change): most
        // of the 500 hold no descriptor on it, where each held its connection open before.
        #expect(await eventually(timeout: .seconds(60), every: .milliseconds(500)) {
            Self.indexDescriptors(pid: agent.pid) < Self.folders / 2
        }, "\(Self.indexDescriptors(pid: agent.pid)) descriptors open on index files")
    }

    /// Descriptors `pid` holds on index databases (not their `-wal` and `-shm`).
    static func indexDescriptors(pid: Int32) -> Int {
        openFiles(pid: pid).filter { $0.hasSuffix("/index.sqlite") }.count
    }
}
}
