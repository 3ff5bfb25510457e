@testable import DocsyncIndex
import DocsyncTestSupport
import Foundation
import GRDB
import Testing

/// The counts `status` reads are kept, not counted (see `Index+Tally.swift`): whichever keeps them
/// on the writing connection, they agree with counting the rows after inserts, updates, deletes,
/// set-wide statements, a transaction that rolled back and a statement that failed.
@Suite struct TallyTests {
    /// Each kept count against the rows it stands for.
    static func kept(_ index: Index) async throws -> [String: [Int]] {
        try await index.read { tx in
            var out: [String: [Int]] = [:]
            for (name, rows) in Index.tallies {
                let kept = try Int.fetchOne(tx.db, sql: "SELECT n FROM tally WHERE name = ?", arguments: [name]) ?? -1
                out[name] = [kept, try Int.fetchOne(tx.db, sql: "SELECT COUNT(*) FROM \(rows)") ?? -1]
            }
            return out
        }
    }

    static func document(_ i: Int) -> DocumentRow {
        DocumentRow(id: "d\(i)", docType: "note", path: "n/d\(i).json", body: #"{"n":\#(i)}"#, bodyHash: "h\(i)")
    }

    /// A day's worth of changes through the transaction's own calls and raw statements.
    static func work(_ index: Index, from start: Int) async throws {
        try await index.write { tx in
            for i in start..<start + 60 {
                try tx.upsertDocument(document(i))
                let state: FileRow.State = i % 10 == 0 ? .invalid : i % 10 == 1 ? .excluded : .ok
                try tx.upsertFile(FileRow(path: "n/d\(i).json", docID: "d\(i)", docType: "note", hash: "h", stat: FileStat(size: 1, mtimeNs: 1, inode: UInt64(i)), state: state, error: nil))
                try tx.enqueue(key: .document("d\(i)"), docID: "d\(i)", kind: .put, payload: nil, bodyHash: "h\(i)", queuedAt: 1)
            }
            // A second enqueue of the same key replaces the entry: no new row.
            try tx.enqueue(key: .document("d\(start)"), docID: "d\(start)", kind: .put, payload: nil, bodyHash: "h2", queuedAt: 2)
        }
        try await index.write { tx in
            var tombstone = document(start + 1)
            tombstone.deletedAt = 5
            try tx.upsertDocument(tombstone)
            try tx.deleteFile(at: "n/d\(start + 2).json")
            try tx.db.execute(sql: "UPDATE document SET state = 'synced' WHERE rowid % 3 = 0")
            try tx.db.execute(sql: "UPDATE document SET state = 'rejected' WHERE rowid % 7 = 0")
            try tx.db.execute(sql: "DELETE FROM outbox WHERE rowid % 2 = 0")
            try tx.db.execute(sql: "UPDATE file SET state = 'ok' WHERE path LIKE '%0.json'")
            // A statement refused by a constraint, caught, and the transaction goes on.
            let duplicate = FileRow(path: "elsewhere.json", docID: "d\(start + 3)", docType: "note", hash: "h", stat: FileStat(size: 1, mtimeNs: 1, inode: 1), state: .ok, error: nil)
            #expect(throws: DatabaseError.self) { try tx.upsertFile(duplicate) }
        }
        // Rolled back: none of it counts.
        struct Abandoned: Error {}
        await #expect(throws: Abandoned.self) {
            try await index.write { tx in
                for i in start + 100..<start + 110 { try tx.upsertDocument(document(i)) }
                try tx.db.execute(sql: "DELETE FROM outbox")
                throw Abandoned()
            }
        }
    }

    @Test(arguments: [TallyCounter.Keeper.hook, .triggers])
    func theKeptCountsAgreeWithCountingTheRows(keeper: TallyCounter.Keeper) async throws {
        let folder = try TempFolder("tally")
        defer { folder.remove() }
        let path = folder.file("index.sqlite")
        let index = try Index(path: path, tallyKeeper: keeper)
        #expect(index.tally.keeper == keeper, "Debian's SQLite has the pre-update hook; without it the index falls back to triggers")
        try await Self.work(index, from: 0)
        for (name, counts) in try await Self.kept(index) { #expect(counts[0] == counts[1], "\(name): kept \(counts[0]), counted \(counts[1])") }
        #expect(try await Self.kept(index)["outbox"]?[1] ?? 0 > 0)

        // Opened again with the other keeper, the counts go on from where they were.
        let other = try Index(path: path, tallyKeeper: keeper == .hook ? .triggers : .hook)
        try await Self.work(other, from: 1000)
        for (name, counts) in try await Self.kept(other) { #expect(counts[0] == counts[1], "\(name): kept \(counts[0]), counted \(counts[1])") }
    }

    /// An index in memory (the engine's rules in the tests) keeps its counts as one on disk does,
    /// and a release of memory, which closes an idle lean index, leaves it open and whole.
    @Test(arguments: [TallyCounter.Keeper.hook, .triggers])
    func anIndexInMemoryKeepsItsCountsAndItsRows(keeper: TallyCounter.Keeper) async throws {
        let index = try Index.inMemory(tallyKeeper: keeper)
        #expect(index.isInMemory && index.tally.keeper == keeper)
        try await Self.work(index, from: 0)
        await index.releaseMemory()
        #expect(index.holdsConnection, "closed, an in-memory index would be empty")
        try await Self.work(index, from: 1000)
        for (name, counts) in try await Self.kept(index) { #expect(counts[0] == counts[1], "\(name): kept \(counts[0]), counted \(counts[1])") }
        #expect(try await index.read { try $0.document(id: "d1005") }?.body == #"{"n":1005}"#, "read back through the one connection")
    }

    /// A lean index closes its connection while idle: the one opened again keeps counting.
    @Test(arguments: [TallyCounter.Keeper.hook, .triggers])
    func theCountsGoOnAcrossAnIdleClose(keeper: TallyCounter.Keeper) async throws {
        let folder = try TempFolder("tally-lean")
        defer { folder.remove() }
        let index = try Index(path: folder.file("index.sqlite"), tallyKeeper: keeper, footprint: .lean)
        try await Self.work(index, from: 0)
        await index.releaseMemory()
        try await Self.work(index, from: 1000)
        for (name, counts) in try await Self.kept(index) { #expect(counts[0] == counts[1], "\(name): kept \(counts[0]), counted \(counts[1])") }
        #expect(try await Self.kept(index)["outbox"]?[1] ?? 0 > 0)
    }

    @Test func anIndexFromBeforeTheHookLosesItsTriggers() async throws {
        let folder = try TempFolder("tally-upgrade")
        defer { folder.remove() }
        let index = try Index(path: folder.file("index.sqlite"))
        let triggers = try await index.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'trigger'") ?? -1 }
        #expect(triggers == 0)
    }
}
