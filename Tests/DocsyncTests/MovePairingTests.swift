#if canImport(Glibc)
import Glibc
#endif
@testable import DocsyncAgent
import DocsyncTestSupport
import Testing

/// A move is one change, however the watcher sees it.
@Suite struct MovePairingTests {
    /// Regression: under load, a file moved into a folder made moments before was seen in two
    /// batches, its leaving and its arrival; the deletion went out between them, and the server
    /// stored the document deleted (rev 2), then back (rev 3): other folders saw it vanish.
    /// Here the two halves are made two batches on purpose: the file leaves the tree, the agent
    /// records it gone, and it comes back into a new folder.
    @Test func aMoveSeenInTwoBatchesIsOneMoveNotADeletionAndARecreation() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("move-pairing")
        let outside = try TempFolder("move-pairing-outside")
        defer { folder.remove(); outside.remove() }
        // The pairing window is the agent's promise; the test's own steps between the two halves
        // (a status poll, a mkdir, a rename) took over the default second on a loaded CI machine.
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) {
            $0.movePairing = .seconds(20)
        }
        try folder.write("notes/a.json", #"{"id":"a","docType":"note","title":"moving"}"#)
        #expect(await eventually {
            guard let status = try? await AgentStatus.read(root: folder.path) else { return false }
            return status.inSync() && status.counts.synced == 1
        })
        #expect(rename(folder.file("notes/a.json"), outside.file("a.json")) == 0)
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.tombstones == 1 }, "\(agent.logs.all.suffix(4))")
        #expect(mkdir(folder.file("archive"), 0o755) == 0)
        #expect(rename(outside.file("a.json"), folder.file("archive/a.json")) == 0)
        #expect(await eventually {
            guard let status = try? await AgentStatus.read(root: folder.path) else { return false }
            return status.inSync() && status.counts.synced == 1 && status.counts.tombstones == 0
        }, "\(agent.logs.all.suffix(4))")
        let document = try #require(try await server.api.documents(type: "note")["a"])
        #expect(document["rev"] == .number("1"), "a move is not a write: \(document)")
        #expect(try folder.read("archive/a.json").contains("moving"))
        try await agent.stop()
        await server.stop()
    }
}
