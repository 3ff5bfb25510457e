@testable import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import GRDB
import Testing

/// The lean index, what each of hundreds of folders in one process gets: one connection, closed
/// while the folder is idle, a bounded number open at once, short `IN` lists.
@Suite struct LeanIndexTests {
    /// A lean index (hundreds of folders in one process) reads on its writing connection and
    /// closes its file while its folder is idle, opening it again at the next use: what was
    /// written reads back, before and after, and the write count the progress line and the memory
    /// keeper look at moves with each write that changed something, not with one that did not.
    @Test func aLeanIndexClosesItsFileWhenIdleAndReadsWhatItWroteAfter() async throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        let index = try Index.open(root: folder.path, footprint: .lean)
        let before = index.writes.value
        try await index.write { try $0.setMeta(.cursor, "c1") }
        #expect(index.writes.value == before + 1)
        #expect(try await index.read { try $0.meta(.cursor) } == "c1")
        #expect(Self.openDescriptors(of: index.path) > 0)
        await index.releaseMemory()
        #expect(Self.openDescriptors(of: index.path) == 0, "an idle lean index keeps no file open")
        #expect(try index.readSync { try $0.meta(.cursor) } == "c1")
        try await index.write { try $0.setMeta(.cursor, "c2") }
        #expect(try await index.read { try $0.meta(.cursor) } == "c2")
        #expect(index.writes.value == before + 2)
        try await index.write { _ = try $0.meta(.cursor) }
        #expect(index.writes.value == before + 2, "a write that changed nothing is not counted")
        await index.releaseMemory()
        // Its counts survive the close: the tally is kept by the connection opened again.
        try await index.write { try $0.setMeta(.cursor, "c3") }
        #expect(index.writes.value == before + 3)
    }

    /// A process holds at most so many lean indexes open: opening one more closes the one unused
    /// for longest, which opens again at its next use and reads what it held.
    @Test func openingMoreLeanIndexesThanTheBoundClosesTheLeastRecentlyUsed() async throws {
        let folder = try TempFolder("index-bound")
        defer { folder.remove() }
        let limit = OpenIndexes(capacity: 3, closesBehind: 0)
        var indexes: [Index] = []
        var mostFiles = 0
        for i in 0..<6 {
            let index = try Index(path: folder.file("i\(i).sqlite"), footprint: .lean, openLimit: limit)
            mostFiles = max(mostFiles, Self.openIndexFiles(in: folder.path))
            try await index.write { try $0.setMeta(.cursor, "c\(i)") }
            mostFiles = max(mostFiles, Self.openIndexFiles(in: folder.path))
            indexes.append(index)
        }
        #expect(indexes.map(\.holdsConnection) == [false, false, false, true, true, true])
        #expect(limit.count == 3)
        // With no close left to the closing thread, the bound holds at every moment: an index
        // that made room closed the others before it was used.
        #expect(mostFiles <= 3, "\(mostFiles) index files open at once")
        #expect(Self.openDescriptors(of: folder.file("i0.sqlite")) == 0, "a closed index keeps no file open")

        // Used again, the first opens and reads what it held; the least recent one (the fourth) closes.
        #expect(try await indexes[0].read { try $0.meta(.cursor) } == "c0")
        #expect(indexes.map(\.holdsConnection) == [true, false, false, false, true, true])
        #expect(limit.count == 3)
        // The sweep's close of an idle one makes room without another closing.
        await indexes[5].releaseMemory()
        #expect(limit.count == 2)
        #expect(try await indexes[1].read { try $0.meta(.cursor) } == "c1")
        #expect(indexes.map(\.holdsConnection) == [true, true, false, false, true, false])
    }

    /// Closes wait on one closing thread; when it falls behind (a slow disk, the suite's load),
    /// the openers close what they take room from themselves, so the files held open stay within
    /// the bound and the few closes allowed to wait. Unbounded, 500 folders held 411 files in CI.
    @Test func openersCloseForThemselvesOnceTheClosingThreadFallsBehind() async throws {
        let folder = try TempFolder("index-behind")
        defer { folder.remove() }
        let limit = OpenIndexes(capacity: 3, closesBehind: 2)
        let gate = DispatchSemaphore(value: 0)
        limit.closing.async { gate.wait() }
        var released = false
        defer { if !released { gate.signal() } }
        var indexes: [Index] = []
        var mostFiles = 0
        for i in 0..<12 {
            let index = try Index(path: folder.file("i\(i).sqlite"), footprint: .lean, openLimit: limit)
            try await index.write { try $0.setMeta(.cursor, "c\(i)") }
            mostFiles = max(mostFiles, Self.openIndexFiles(in: folder.path))
            indexes.append(index)
        }
        #expect(mostFiles == 5, "the 3 open and the 2 closes waiting")
        gate.signal()
        released = true
        #expect(await eventually { Self.openIndexFiles(in: folder.path) == 3 })
        #expect(try await indexes[0].read { try $0.meta(.cursor) } == "c0")
    }

    /// How many index files in `folder` this process holds a descriptor on (each counted once,
    /// however many connections have it open).
    static func openIndexFiles(in folder: String) -> Int {
        Set(openFiles(pid: getpid()).filter { $0.hasPrefix(folder + "/") && $0.hasSuffix(".sqlite") }).count
    }

    /// How many of this process's descriptors are open on `path` (or its `-wal`/`-shm`).
    static func openDescriptors(of path: String) -> Int {
        openFiles(pid: getpid()).filter { $0.hasPrefix(path) }.count
    }

    /// A lean index (hundreds of folders in one process) asks for at most 64 values in one `IN`
    /// list: each length's statement stays prepared on its connection while the folder is at
    /// work, and a 500-value list's program is many times a 64-value one's. Both find every row.
    @Test func aLeanIndexKeepsItsListStatementsShort() async throws {
        let folder = try TempFolder("index-lists")
        defer { folder.remove() }
        let stat = FileStat(size: 1, mtimeNs: 1, inode: 1)
        let paths = (0..<700).map { "f\($0).json" }
        var held: [Index.Footprint: (longest: Int, bytes: Int)] = [:]
        for footprint in [Index.Footprint.roomy, .lean] {
            let index = try Index(path: folder.file("\(footprint).sqlite"), footprint: footprint)
            try await index.write { tx in
                for p in paths { try tx.upsertFile(FileRow(path: p, docID: nil, docType: nil, hash: nil, stat: stat, state: .ok, error: nil)) }
            }
            let found = try await index.write { try $0.files(at: paths + ["missing.json"]) }
            #expect(found.keys.sorted() == paths.sorted(), "\(footprint)")
            // What the connection holds prepared (SQLite's `sqlite_stmt` table): the longest list
            // and the memory of the list statements.
            held[footprint] = try await index.write { tx in
                var (longest, bytes) = (0, 0)
                for row in try Row.fetchAll(tx.db, sql: "SELECT sql, mem FROM sqlite_stmt") {
                    let sql: String = row["sql"]
                    guard sql.contains(" IN (") else { continue }
                    longest = max(longest, sql.filter { $0 == "?" }.count)
                    bytes += row["mem"] as Int
                }
                return (longest, bytes)
            }
        }
        let (roomy, lean) = (try #require(held[.roomy]), try #require(held[.lean]))
        #expect(roomy.longest == 500)
        #expect(lean.longest == 64)
        #expect(lean.bytes * 3 < roomy.bytes, "list statements: lean \(lean.bytes) bytes, roomy \(roomy.bytes)")
    }
}
