import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Testing

/// Files others attached come into the folder: two folders, one server, real processes (the
/// two-way tests' rig).
extension HeavySuites {
@Suite(.serialized) struct DownloadTests {
    /// The size the issue asks for: large enough that nothing may be held in memory whole.
    static let size = 50 << 20

    @Test func aFileAttachedInOneFolderArrivesInTheOtherAndItsEditsAndDeletionComeBack() async throws {
        let rig = try await TwoWayTests.Rig()
        defer { Task { await rig.finish() } }
        let sha = try rig.a.writeRandom("scans/big.bin", size: Self.size, seed: 1)
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"scan","scan":{"$file":"../scans/big.bin"}}"#)

        // B holds the document with a reference, and the file beside it, byte-identical.
        #expect(await eventually(timeout: .seconds(60)) { object("note/doc.json", in: rig.b)?["scan"] == fileRef("doc.scan.bin") })
        #expect(ContentHash.sha256Hex(try rig.b.bytes("note/doc.scan.bin")) == sha)
        #expect(try cacheEntries(rig.b) == [sha], "kept once in the cache, by content")

        // B edits the file: A receives the new bytes where its reference points.
        let edited = try rig.b.writeRandom("note/doc.scan.bin", size: 3 << 20, seed: 2)
        #expect(await eventually(timeout: .seconds(60)) { (try? ContentHash.sha256Hex(rig.a.bytes("scans/big.bin"))) == edited })
        #expect(object("notes/doc.json", in: rig.a)?["scan"] == fileRef("../scans/big.bin"), "A's reference is as A wrote it")

        // B deletes it: A's property becomes null and A's file goes to the trash.
        try rig.b.remove("note/doc.scan.bin")
        #expect(await eventually(timeout: .seconds(30)) { object("notes/doc.json", in: rig.a)?["scan"] == .null })
        #expect(await eventually { !rig.a.exists("scans/big.bin") })
        let trash = try FileManager.default.contentsOfDirectory(atPath: rig.a.file(".docsync/trash"))
        #expect(trash.contains { $0.hasPrefix("doc-scan-") && $0.hasSuffix(".bin") }, "recoverable from .docsync/trash: \(trash)")
        #expect(object("notes/doc.json", in: rig.a)?["title"] == "scan", "the rest of the document stays")
    }

    func object(_ path: String, in folder: TempFolder) -> JSONObject? {
        (try? folder.bytes(path)).flatMap { try? DocumentRules.parseObject(Array($0)) }
    }

    /// What `.docsync/files` holds, by name (the content's hash).
    func cacheEntries(_ folder: TempFolder) throws -> [String] {
        let root = folder.file(".docsync/files")
        return try FileManager.default.contentsOfDirectory(atPath: root).filter { $0 != "tmp" }.flatMap {
            try FileManager.default.contentsOfDirectory(atPath: root + "/" + $0)
        }
    }
}
}

/// `{"$file": path}`.
func fileRef(_ path: String) -> JSONValue {
    .object(JSONObject([(key: FileReference.key, value: .string(path))]))
}
