#if canImport(Glibc)
import Glibc
#endif
@testable import DocsyncAgent
@testable import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import GRDB
import Testing

extension HeavySuites.EnginePromisesTests {
    /// `folder/note` made a tmpfs of `size` of its own, so that the docType's files run out of
    /// space while the index (elsewhere in the tree) still has room; `nil`, said as an issue,
    /// where a tmpfs cannot be mounted (needs root).
    func notesOnASmallDisk(_ folder: TempFolder, size: String) -> SmallDisk? {
        let notes = folder.file("note")
        #expect(mkdir(notes, 0o755) == 0)
        guard let disk = SmallDisk(at: notes, size: size) else {
            Issue.record("cannot mount a tmpfs here (needs root); the disk-full test did not run")
            return nil
        }
        return disk
    }

    /// Regression (issue 61's benchmark, a pull of 77,000 documents onto a disk out of inodes):
    /// each failed change was retried on its own backoff clock, 1,400 a second, every one logged
    /// at error level, a core busy and the log growing by 140 MB in five minutes. While nothing
    /// can be written, a retry pass that writes none holds back every failed change for one
    /// backoff step, and a call's failures are logged in a few lines.
    @Test func manyChangesThatCannotBeWrittenAreTriedABatchAStepWhileTheDiskIsFull() async throws {
        let folder = try TempFolder("full-many")
        defer { folder.remove() }
        // Room for the 1,500 files once freed (a page of tmpfs each).
        guard let disk = notesOnASmallDisk(folder, size: "16m") else { return }
        defer { disk.unmount() }
        let server = try await TestServer.start()
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        disk.fill(leaving: 0)
        let count = 1_500
        for start in stride(from: 0, to: count, by: 500) {
            let documents = (start..<start + 500).map { #"{"id":"full\#($0)","docType":"note","n":\#($0)}"# }.joined(separator: ",")
            let reply = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"echo":false,"documents":[\#(documents)]}"#)
            #expect(reply.status == 200)
        }
        let index = agent.index
        func attempts() async throws -> (rows: Int, tries: Int) {
            try await index.read { tx in
                let row = try Row.fetchOne(tx.db, sql: "SELECT COUNT(*), COALESCE(SUM(attempts), 0) FROM pull_failure")!
                return (row[0], row[1])
            }
        }
        #expect(await eventually { (try? await attempts().rows) == count }, "\(agent.logs.all.suffix(4))")
        // The test's backoff: 50 ms doubling to 500 ms. Each change on its own clock was tried
        // every half second at most: 1,500 changes, some 9,000 tries in three seconds; a batch
        // of 200 a step is at most 6 steps at the cap, after a few shorter ones.
        let before = try await attempts().tries
        try await Task.sleep(for: .seconds(3))
        let tried = try await attempts().tries - before
        #expect(tried <= 12 * ServerChanges.retryBatch, "a batch a backoff step, not each on its own: \(tried) tries in 3 s")
        let lines = agent.logs.all.filter { $0.contains("cannot apply a change from the server") }.count
        #expect(lines < 100, "a call's failures in a few lines, not one each: \(lines)")
        disk.free()
        #expect(await eventually(timeout: .seconds(30)) { (try? await attempts().rows) == 0 }, "every change arrives once there is room")
        try await agent.stop()
        await server.stop()
    }
}
