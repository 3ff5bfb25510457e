#if canImport(Glibc)
import Glibc
#endif
@testable import DocsyncAgent
import DocsyncFiles
import DocsyncIndex
import DocsyncTestSupport
import Synchronization
import Testing

/// The two parts of a pipelined first pull on their own: the chain of page records (a failed
/// record lets no cursor past it) and the note of the pull's own new files (a file changed since
/// it was written is never taken for the agent's own).
@Suite struct PipelinedPullTests {
    struct DiskFull: Error {}

    @Test func aFailedRecordStopsTheCursorAfterItAndIsThrownOnceToTheDrain() async throws {
        let records = PendingRecords()
        let cursorStored = Mutex(false)
        try await records.add(ids: ["a"], paths: ["note/a.json"]) { throw DiskFull() }
        try await records.append { cursorStored.withLock { $0 = true } }
        await records.settle()  // another holder of the tree lock: waits, leaves the failure
        #expect(await records.overlaps(ids: ["a"]), "the failed page is still pending for the puller")
        await #expect(throws: DiskFull.self) { try await records.drain() }
        #expect(!cursorStored.withLock { $0 }, "no cursor past a page that is not recorded")
        try await records.drain()  // thrown once
        #expect(await !records.overlaps(ids: ["a"]))
    }

    @Test func pagesAreRecordedInOrderAndTheNextWaitsForTheOneBefore() async throws {
        let records = PendingRecords()
        let order = Mutex<[String]>([])
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        try await records.add(ids: ["a"], paths: ["note/a.json"]) {
            for await _ in gate { break }
            order.withLock { $0.append("page 1") }
        }
        #expect(await records.overlaps(ids: ["x", "a"]))
        #expect(await records.overlaps(ids: [], paths: ["note/a.json"]))
        #expect(await !records.overlaps(ids: ["b"], paths: ["note/b.json"]))
        try await records.append { order.withLock { $0.append("cursor 1") } }
        let second = Task { try await records.add(ids: ["b"], paths: ["note/b.json"]) { order.withLock { $0.append("page 2") } } }
        open.yield()
        try await second.value
        try await records.drain()
        #expect(order.withLock { $0 } == ["page 1", "cursor 1", "page 2"])
    }

    @Test func onlyAFileThatStillHoldsWhatWasWrittenIsTheAgentsOwn() throws {
        let folder = try TempFolder("own-new-files")
        defer { folder.remove() }
        let own = OwnNewFiles()
        func written(_ path: String, bytes: String, dated: Bool) throws -> (path: String, stat: FileStat) {
            try folder.write(path, bytes)
            if dated {
                var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
                #expect(utimensat(AT_FDCWD, folder.file(path), &times, 0) == 0)
            }
            let info = try #require(FileSystem.info(folder.file(path)))
            return (path, FileStat(recording: info))
        }
        own.add([
            try written("note/same.json", bytes: "{}", dated: true), try written("note/saved.json", bytes: "{}", dated: true),
            try written("note/fresh.json", bytes: "{}", dated: false),
        ])
        try folder.write("note/saved.json", #"{"mine":1}"#)  // a save after the write
        let reported: Set = ["note/same.json", "note/saved.json", "note/fresh.json", "note/other.json"]
        #expect(own.unexplained(reported, root: folder.path) == ["note/saved.json", "note/fresh.json", "note/other.json"])
        #expect(own.unexplained(["note/same.json"], root: folder.path) == ["note/same.json"], "a second report is scanned")
        #expect(own.isEmpty)
    }

    @Test func pastTheLimitNotesAreForgottenNotKeptForEver() {
        let own = OwnNewFiles()
        let stat = FileStat(size: 2, mtimeNs: 1_000, inode: 1)
        own.add((0..<OwnNewFiles.limit).map { ("note/\($0).json", stat) })
        own.add([("note/last.json", stat)])
        #expect(own.unexplained(["note/0.json"], root: "/nonexistent") == ["note/0.json"])
        #expect(!own.isEmpty, "the page past the limit is noted")
    }
}
