import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Testing

/// Files others attached come into the folder: two folders, one server, real processes.
extension HeavySuites {
@Suite(.serialized) struct DownloadTests {
    /// The size the issue asks for: large enough that nothing may be held in memory whole.
    static let size = 50 << 20

    @Test func aFileAttachedInOneFolderArrivesInTheOtherAndItsEditsAndDeletionComeBack() async throws {
        let rig = try await TwoFolders()
        defer { Task { await rig.finish() } }
        let sha = try rig.a.writeRandom("scans/big.bin", size: Self.size, seed: 1)
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"scan","scan":{"$file":"../scans/big.bin"}}"#)

        // B holds the document with a reference, and the file beside it, byte-identical.
        #expect(await eventually(timeout: .seconds(60)) { rig.object("note/doc.json", in: rig.b)?["scan"] == fileRef("doc.scan.bin") })
        #expect(ContentHash.sha256Hex(try rig.b.bytes("note/doc.scan.bin")) == sha)
        #expect(try rig.cacheEntries(rig.b) == [sha], "kept once in the cache, by content")

        // B edits the file: A receives the new bytes where its reference points.
        let edited = try rig.b.writeRandom("note/doc.scan.bin", size: 3 << 20, seed: 2)
        #expect(await eventually(timeout: .seconds(60)) { (try? ContentHash.sha256Hex(rig.a.bytes("scans/big.bin"))) == edited })
        #expect(rig.object("notes/doc.json", in: rig.a)?["scan"] == fileRef("../scans/big.bin"), "A's reference is as A wrote it")

        // B deletes it: A's property becomes null and A's file goes to the trash.
        try rig.b.remove("note/doc.scan.bin")
        #expect(await eventually(timeout: .seconds(30)) { rig.object("notes/doc.json", in: rig.a)?["scan"] == .null })
        #expect(await eventually { !rig.a.exists("scans/big.bin") })
        let trash = try FileManager.default.contentsOfDirectory(atPath: rig.a.file(".docsync/trash"))
        #expect(trash.contains { $0.hasPrefix("doc-scan-") && $0.hasSuffix(".bin") }, "recoverable from .docsync/trash: \(trash)")
        #expect(rig.object("notes/doc.json", in: rig.a)?["title"] == "scan", "the rest of the document stays")
    }

    /// Two folders syncing through `docsync serve`, each with its own `docsync watch`.
    final class TwoFolders: @unchecked Sendable {
        let work: TempFolder
        let a: TempFolder
        let b: TempFolder
        let server: DocsyncProcess
        let url: String
        var agents: [DocsyncProcess] = []

        init() async throws {
            work = try TempFolder("downloads")
            a = try TempFolder("folder-a")
            b = try TempFolder("folder-b")
            try work.write("token", "download-token\n")
            server = try DocsyncProcess(
                ["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")], logDirectory: work.path, name: "serve")
            url = try await server.firstLine()
            agents = [try start(a), try start(b)]
        }

        func start(_ folder: TempFolder) throws -> DocsyncProcess {
            try DocsyncProcess(
                ["watch", folder.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-\(folder.path == a.path ? "a" : "b")")
        }

        func finish() async {
            for agent in agents { await agent.stop() }
            await server.stop()
            work.remove(); a.remove(); b.remove()
        }

        func object(_ path: String, in folder: TempFolder) -> JSONObject? {
            (try? folder.bytes(path)).flatMap { try? DocumentRules.parseObject(Array($0)) }
        }

        func cacheEntries(_ folder: TempFolder) throws -> [String] {
            let root = folder.file(".docsync/files")
            return try FileManager.default.contentsOfDirectory(atPath: root).filter { $0 != "tmp" }.flatMap {
                try FileManager.default.contentsOfDirectory(atPath: root + "/" + $0)
            }
        }
    }
}
}

/// `{"$file": path}`.
func fileRef(_ path: String) -> JSONValue {
    .object(JSONObject([(key: FileReference.key, value: .string(path))]))
}
