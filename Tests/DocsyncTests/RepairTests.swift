import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Trust finding (fourth round, 10): 8 KiB of random bytes in `index.sqlite` (its WAL gone) and a
/// server edit made while the agent was stopped: the agent started without a word and its
/// unchanged v1 overwrote the server's rev 3 for everyone. The index is checked at start and
/// refused with the way out; `docsync repair` rebuilds it, and a file that differs from the
/// server becomes a conflict copy, never an overwrite.
extension HeavySuites {
@Suite(.serialized) struct RepairTests {
    @Test func aDamagedIndexIsRefusedAndRepairNeverOverwritesTheServer() async throws {
        let s = try await EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        try s.docs.write("notes/x.json", #"{"id":"x","docType":"note","title":"v1"}"#)
        try s.docs.write("notes/y.json", #"{"id":"y","docType":"note","title":"same"}"#)
        let sync = ["sync", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile]
        #expect(try await runDocsync(sync, logDirectory: s.work.path).0 == 0)
        for title in ["v2", "v3 on the server"] {
            #expect(try await s.api.request("PUT", "/api/document", body: #"{"id":"x","docType":"note","title":"\#(title)"}"#).status == 200)
        }
        // Damage: the log written into the file and gone, then random bytes over its second page.
        let index = s.docs.file(".docsync/index.sqlite")
        let checkpoint = Process()
        checkpoint.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        checkpoint.arguments = [index, "PRAGMA wal_checkpoint(TRUNCATE);"]
        try checkpoint.run()
        checkpoint.waitUntilExit()
        for name in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: index + name) }
        let handle = try #require(FileHandle(forUpdatingAtPath: index))
        try handle.seek(toOffset: 8192)
        try handle.write(contentsOf: Data((0..<8192).map { _ in UInt8.random(in: 0...255) }))
        try handle.close()

        let (refused, _, why) = try await runDocsync(sync, logDirectory: s.work.path)
        #expect(refused != 0 && why.contains("is damaged") && why.contains("docsync repair"), "\(why)")
        #expect(try await s.api.documents(type: "note")["x"]?["title"] == "v3 on the server")

        let (code, out, err) = try await runDocsync(["repair", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile], logDirectory: s.work.path)
        #expect(code == 0, "\(out) \(err)")
        #expect(out.contains("1 files differed from the server's version"), "\(out)")
        #expect(try s.docs.read("notes/x.json").contains("v3 on the server"))
        let copies = try FileManager.default.contentsOfDirectory(atPath: s.docs.file("notes")).filter { $0.contains(".sync-conflict-") }
        #expect(copies.count == 1, "\(copies)")
        #expect(try copies.first.map { try s.docs.read("notes/" + $0) }?.contains("v1") == true)
        #expect(try await runDocsync(sync, logDirectory: s.work.path).0 == 0)
        let stored = try await s.api.documents(type: "note")
        #expect(stored["x"]?["title"] == "v3 on the server" && stored["x"]?["rev"] == .number("3"), "nothing was sent over it: \(String(describing: stored["x"]))")
    }

    /// An index that lost its last transactions (its log deleted, the file itself sound) is
    /// taken for a new one: every file then meets the server's version without a version the two
    /// agreed on, and the server's wins the file, the folder's kept beside it.
    @Test func anIndexThatLostItsLogNeverOverwritesTheServer() async throws {
        let s = try await EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        try s.docs.write("notes/x.json", #"{"id":"x","docType":"note","title":"v1"}"#)
        let sync = ["sync", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile]
        #expect(try await runDocsync(sync, logDirectory: s.work.path).0 == 0)
        #expect(try await s.api.request("PUT", "/api/document", body: #"{"id":"x","docType":"note","title":"v2 on the server"}"#).status == 200)
        try FileManager.default.removeItem(atPath: s.docs.file(".docsync"))
        #expect(try await runDocsync(sync, logDirectory: s.work.path).0 == 0)
        #expect(try await s.api.documents(type: "note")["x"]?["title"] == "v2 on the server")
        #expect(try s.docs.read("notes/x.json").contains("v2 on the server"))
        let copies = try FileManager.default.contentsOfDirectory(atPath: s.docs.file("notes")).filter { $0.contains(".sync-conflict-") }
        #expect(try copies.first.map { try s.docs.read("notes/" + $0) }?.contains("v1") == true, "\(copies)")
    }
}
}
