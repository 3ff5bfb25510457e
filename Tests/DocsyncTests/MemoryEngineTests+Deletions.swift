@testable import DocsyncAgent
import DocsyncIndex
import DocsyncTestSupport
import Foundation
import Testing

/// Mass deletion from the server is a decision, on the server in memory and an index in memory.
/// What needs `docsync resolve` (a process reading the index's file) stays in DeletionGuardTests.
extension MemoryEngineTests {
    /// Documents of docType `note` with these ids, stored on `server`.
    func putNotes(_ server: MemoryServer, _ ids: [String]) async throws {
        for id in ids { try await put(server, #"{"id":"\#(id)","docType":"note","v":1}"#) }
    }

    /// Trust finding (fourth round, 7): counted per pull, a client deleting 200 of 250 documents
    /// 30 ms apart (one tombstone a reply) had every file trashed and none held. Deletions that
    /// keep coming are one burst, counted together and held before any goes. The burst's quiet is
    /// a minute here: on a loaded machine this loop itself can stall past the default 2 s, which
    /// ends the burst as the rule says (DeletionGuardRuleTests checks that boundary on a stepped clock).
    @Test func deletionsArrivingOneAReplyAreCountedTogetherAndHeld() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("deletion-trickle")
        defer { folder.remove() }
        let ids = (0..<250).map { "n\($0)" }
        try await putNotes(server, ids)
        let agent = try await agent(folder, server) { $0.deletionGuard = DeletionGuard(quiet: .seconds(60)) }
        let index = agent.index
        #expect(await eventually(timeout: Self.patience) { ids.allSatisfy { folder.exists("note/\($0).json") } })
        for id in ids.prefix(200) {
            _ = try await server.store.delete(id: id, docType: "note", now: Self.now())
            try await Task.sleep(for: .milliseconds(30))  // the pace of the finding's client, not a synchronisation
        }
        #expect(await eventually(timeout: Self.patience) { (try? await AgentStatus.read(index))?.heldDeletions == 200 }, "\(agent.logs.all.suffix(4))")
        #expect(ids.allSatisfy { folder.exists("note/\($0).json") }, "no file went to the trash")
        try await agent.stop()
    }

    /// With the guard off, a deletion of every document is applied.
    @Test func theGuardCanBeOff() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("deletion-guard-off")
        defer { folder.remove() }
        let ids = (0..<120).map { "m\($0)" }
        try await putNotes(server, ids)
        let agent = try await agent(folder, server) { $0.deletionGuard = nil }
        #expect(await eventually(timeout: Self.patience) { ids.allSatisfy { folder.exists("note/\($0).json") } })
        for id in ids { _ = try await server.store.delete(id: id, docType: "note", now: Self.now()) }
        #expect(await eventually(timeout: Self.patience) { ids.allSatisfy { !folder.exists("note/\($0).json") } })
        #expect(try await AgentStatus.read(agent.index).heldDeletions == 0)
        try await agent.stop()
    }
}
