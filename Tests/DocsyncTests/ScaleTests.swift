@testable import DocsyncAgent
import DocsyncClock
import DocsyncFiles
@testable import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import GRDB
import Testing

/// What a full scan holds at once: a chunk of the walk, of the index and of the changes, never
/// the tree (counted through ``ScanSummary/peakHeld``, not by RSS).
@Suite struct ScaleTests {
    static let folders = 40
    static let perFolder = 50

    func scanner(_ folder: TempFolder, chunk: Int) throws -> DocsyncAgent.Scanner {
        var scanner = DocsyncAgent.Scanner(try FolderContext.forTests(folder.path, index: try Index.open(root: folder.path)), maxFileSize: 1 << 20)
        scanner.mergeChunk = chunk
        return scanner
    }

    /// Folder and file names whose byte order differs from a plain sort of the names: `a.json`,
    /// everything in `a/`, then `a-b/` … `a0.json` in bytes; `é` after every ASCII name.
    static func path(_ f: Int, _ n: Int) -> String {
        let folder = ["a", "a-b", "a.b", "a0", "é"][f % 5] + "\(f / 5)"
        return "\(folder)/\(["d", "d-", "d.", "D", "ü"][n % 5])\(n).json"
    }

    @Test func aFullScanOfATreeOfManyChunksHoldsAFewChunksAtMost() async throws {
        let folder = try TempFolder("scale-chunks")
        defer { folder.remove() }
        for f in 0..<Self.folders {
            for n in 0..<Self.perFolder { try folder.write(Self.path(f, n), #"{"id":"d-\#(f)-\#(n)","docType":"note","n":\#(n)}"#) }
        }
        let total = Self.folders * Self.perFolder
        let chunk = 100
        let scanner = try scanner(folder, chunk: chunk)

        let imported = try await scanner.fullScan()
        #expect(imported.queued == total)
        #expect(imported.peakHeld <= 3 * chunk, "held \(imported.peakHeld) records at once for a tree of \(total)")

        let unchanged = try await scanner.fullScan()
        #expect(unchanged.unchanged == total && unchanged.queued == 0 && unchanged.deleted == 0, "\(unchanged)")
        #expect(unchanged.peakHeld <= 3 * chunk)

        // Changes all through the tree while the agent was away: deletions, edits, moves into
        // other folders (a move's old path may come after its new one, or before), new files.
        for f in stride(from: 0, to: Self.folders, by: 4) {
            try FileManager.default.removeItem(atPath: folder.file(Self.path(f, 1)))
            try folder.write(Self.path(f, 2), #"{"id":"d-\#(f)-2","docType":"note","n":"edited"}"#)
            try FileManager.default.moveItem(atPath: folder.file(Self.path(f, 3)), toPath: folder.file(Self.path((f + 21) % Self.folders, 99)))
            try folder.write(Self.path(f, 100), #"{"id":"new-\#(f)","docType":"note"}"#)
        }
        let changed = try await scanner.fullScan()
        let touched = Self.folders / 4
        #expect(changed.deleted == touched, "\(changed)")
        #expect(changed.moved == touched, "\(changed)")
        #expect(changed.queued == 2 * touched, "edits and new files (a move changes no body): \(changed)")

        // The index agrees with the tree, path by path.
        let onDisk = Set(DocsyncWatcherProbe.walk(folder.path).map(\.0))
        let index = try Index.open(root: folder.path)
        let recorded = try await index.read { Set(try $0.allFileStats().keys) }
        #expect(onDisk == recorded)
        #expect(onDisk.count == total, "as many deleted as added")

        // The counts `status` reads are kept by triggers; they agree with counting the rows.
        try folder.write("a0/broken.json", "{ not json")
        try folder.write("a0/other.json", #"{"id":"o","docType":"other-type"}"#)
        _ = try await scanner.fullScan()
        try await index.write { tx in
            try tx.db.execute(sql: "UPDATE document SET state = 'synced' WHERE rowid % 3 = 0")
            try tx.db.execute(sql: "DELETE FROM outbox WHERE rowid % 2 = 0")
            try tx.db.execute(sql: "UPDATE document SET state = 'rejected' WHERE rowid % 7 = 0")
        }
        let (kept, counted, live) = try await index.read { tx -> (StatusCounts, StatusCounts, Int) in
            let row = try Row.fetchOne(tx.db, sql: """
                SELECT (SELECT COUNT(*) FROM document WHERE deleted_at IS NULL) AS live,
                       (SELECT COUNT(*) FROM document WHERE deleted_at IS NOT NULL) AS tombstones,
                       (SELECT COUNT(*) FROM document d WHERE state = 'synced' AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.doc_id = d.id)) AS synced,
                       (SELECT COUNT(*) FROM outbox) AS pending, (SELECT COUNT(*) FROM file WHERE state = 'invalid') AS invalid,
                       (SELECT COUNT(*) FROM file WHERE state = 'excluded') AS excluded,
                       (SELECT COUNT(*) FROM document WHERE state = 'rejected') AS rejected
                """)!
            return (try tx.statusCounts(), StatusCounts(
                live: row["live"], tombstones: row["tombstones"], synced: row["synced"], pending: row["pending"],
                invalid: row["invalid"], rejected: row["rejected"], excluded: row["excluded"]), try tx.liveCount())
        }
        #expect(kept == counted)
        #expect(live == counted.live, "the deletion guard's count alone")
        #expect(kept.invalid == 1 && kept.tombstones == touched && kept.synced > 0 && kept.rejected > 0)
    }

    /// The readers drop each parsed document unless recording will look at it; a scan whose first
    /// chunk makes the index's first upload job has the later chunks' documents parsed again
    /// where they are recorded, and records them all the same.
    @Test func documentsAfterTheFirstUploadJobAreRecordedLikeTheRest() async throws {
        let folder = try TempFolder("scale-uploads")
        defer { folder.remove() }
        try folder.write("f.bin", "attached")
        let total = DocsyncAgent.Scanner.chunkSize + 100
        for i in 0..<total {
            let reference = i == 0 || i == total - 1 ? #","scan":{"$file":"../f.bin"}"# : ""
            try folder.write(String(format: "n/d%04d.json", i), #"{"id":"d\#(i)","docType":"note"\#(reference)}"#)
        }
        // One merge chunk: the whole scan is one pass of reading chunks, whose first makes the job.
        let scanner = try scanner(folder, chunk: 10_000)
        let imported = try await scanner.fullScan()
        #expect(imported.queued == total && imported.invalid == 0, "\(imported)")
        let index = try Index.open(root: folder.path)
        let jobs = try await index.read { tx in try ["d0", "d\(total - 1)", "d1"].map { try tx.uploads(docID: $0).count } }
        #expect(jobs == [1, 1, 0])
    }

    /// A first import's walk takes no `lstat` (there is no recorded stat to compare): each file's
    /// row still gets the stat of the file as read, so the next scan finds the tree unchanged.
    @Test func aFirstImportRecordsEachFilesOwnStatThoughItsWalkTookNone() async throws {
        let folder = try TempFolder("scale-first-stat")
        defer { folder.remove() }
        // Dated an hour ago: a read now records the stat as it is, not as unsettled.
        let past = timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)
        for n in 0..<30 {
            try folder.write(Self.path(n % 5, n), #"{"id":"s\#(n)","docType":"note"}"#)
            _ = [past, past].withUnsafeBufferPointer { utimensat(AT_FDCWD, folder.file(Self.path(n % 5, n)), $0.baseAddress, 0) }
        }
        try FileManager.default.createDirectory(atPath: folder.file("dir.json"), withIntermediateDirectories: true)
        var walk = TreeWalker(root: folder.path).sortedWalk(statFiles: false)
        let walked = walk.next(max: 100)
        #expect(walked.count == 30 && walked.allSatisfy { $0.info == .unknownFile }, "files only, none stat'ed: \(walked.map(\.path))")

        let scanner = try scanner(folder, chunk: 8)
        #expect(try await scanner.fullScan().queued == 30)
        let recorded = try await Index.open(root: folder.path).read { try $0.allFileStats() }
        #expect(recorded.count == 30)
        for (path, summary) in recorded {
            #expect(summary.stat == FileSystem.info(folder.file(path)).map(FileStat.init), "\(path)")
        }
        let again = try await scanner.fullScan()
        #expect(again.unchanged == 30 && again.read == 0, "\(again)")
    }

    @Test func theSortedWalkGivesTheIndexsOrder() throws {
        let folder = try TempFolder("scale-order")
        defer { folder.remove() }
        for f in 0..<10 { for n in 0..<5 { try folder.write(Self.path(f, n), "{}") } }
        try folder.write("a.json", "{}")
        try folder.write("a0.json", "{}")
        var walk = TreeWalker(root: folder.path).sortedWalk()
        var paths: [String] = []
        while true {
            let next = walk.next(max: 7)
            if next.isEmpty { break }
            paths += next.map(\.path)
        }
        #expect(paths.count == 52)
        #expect(paths == paths.sorted(by: bytewiseLess), "\(paths.prefix(12))")
    }
}
