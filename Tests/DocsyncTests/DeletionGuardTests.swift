@testable import DocsyncAgent
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Mass deletion is a decision, not an accident. Regression: one reply saying most documents were
/// deleted moved the whole folder to the trash without a word.
@Suite struct DeletionGuardRuleTests {
    @Test func theRuleHoldsMoreThanTheFractionAndAtLeastTheMinimum() {
        let rule = DeletionGuard(fraction: 0.5, minimum: 100)
        #expect(rule.holds(count: 110, live: 120))
        #expect(!rule.holds(count: 60, live: 120), "half or less goes through")
        #expect(!rule.holds(count: 99, live: 99), "fewer than the minimum goes through")
        #expect(rule.holds(count: 100, live: 0), "an empty count of live documents is not a division by zero")
    }

    /// Deletions closer together than the quiet are one burst, counted against the folder's size
    /// when it began; a pause as long as the quiet starts the next one.
    @Test func deletionsCountTogetherUntilAPauseAsLongAsTheQuiet() {
        let tally = DeletionTally(quiet: .seconds(2))
        let start = ContinuousClock.now
        for step in 0..<200 { _ = tally.add(1, live: 250 - step, now: start + .milliseconds(30 * step)) }
        let last = start + .milliseconds(30 * 199)
        #expect(tally.add(0, live: 50, now: last + .milliseconds(1999)) == (200, 250), "one burst, based on the size it began with")
        #expect(tally.quietFor(now: last + .milliseconds(1500)) == .milliseconds(500), "still going: half a second to wait")
        #expect(tally.quietFor(now: last + .seconds(2)) == nil, "quiet once no deletion came for 2 s")
        #expect(tally.add(1, live: 50, now: last + .seconds(2)) == (1, 50), "a pause of the quiet starts afresh")
        tally.reset()
        #expect(tally.quietFor(now: last) == nil)
    }
}

/// Held deletions the user decides on with `docsync resolve` (a process beside the agent, reading
/// the index's file). The guard's other rules run in memory (MemoryEngineTests+Deletions).
extension HeavySuites {
@Suite(.serialized) struct DeletionGuardTests {
    func deleteOnServer(_ server: TestServer, _ ids: [String]) async throws {
        let stamp = Timestamp(unixMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)).rfc3339
        let tombstones = ids.map { #"{"id":"\#($0)","docType":"note","deleted_at":"\#(stamp)"}"# }.joined(separator: ",")
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(tombstones)]}"#).status == 200)
    }

    @Test func mostOfTheFolderDeletedInOnePullIsHeldUntilTheUserDecides() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("deletion-guard")
        let logs = try TempFolder("deletion-guard-logs")
        defer { folder.remove(); logs.remove() }
        let ids = (0..<120).map { "n\($0)" }
        let documents = ids.map { #"{"id":"\#($0)","docType":"note","v":1}"# }.joined(separator: ",")
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(documents)]}"#).status == 200)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { ids.allSatisfy { folder.exists("note/\($0).json") } })

        try await deleteOnServer(server, Array(ids.prefix(110)))
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.heldDeletions == 110 }, "\(agent.logs.all.suffix(4))")
        #expect(ids.allSatisfy { folder.exists("note/\($0).json") }, "no file went to the trash")
        let status = try await AgentStatus.read(root: folder.path)
        #expect(!status.inSync())
        #expect(status.text(now: 0).contains("docsync resolve --deletions apply DIR"), "\(status.text(now: 0))")
        #expect(agent.logs.count(containing: "those deletions are held") == 1)

        // Refused: the documents go back to the server.
        let (code, out, err) = try await runDocsync(["resolve", "--deletions", "restore", folder.path], logDirectory: logs.path)
        #expect(code == 0, "\(out) \(err)")
        #expect(await eventually(timeout: .seconds(20)) {
            let stored = (try? await server.api.documents(type: "note")) ?? [:]
            return ids.allSatisfy { stored[$0] != nil && stored[$0]?["deleted_at"] == nil }
        }, "every document is back on the server: \(agent.logs.all.suffix(4))")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.inSync() == true })

        // Deleted again and applied: the files go to the trash.
        try await deleteOnServer(server, Array(ids.prefix(110)))
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.heldDeletions == 110 })
        #expect(try await runDocsync(["resolve", "--deletions", "apply", folder.path], logDirectory: logs.path).0 == 0)
        #expect(await eventually(timeout: .seconds(20)) { ids.prefix(110).allSatisfy { !folder.exists("note/\($0).json") } })
        #expect(ids.suffix(10).allSatisfy { folder.exists("note/\($0).json") })
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.heldDeletions == 0 })
        try await agent.stop()
        await server.stop()
    }

}
}

extension HeavySuites.DeletionGuardTests {
    /// Regression: the guard counted a pull's pages as they came and applied each until the total
    /// crossed the rule, so a mass deletion over two pages of 1,000 trashed the first 1,000 files
    /// before it held the rest. Now a page's deletions wait for the pull's total.
    @Test func aMassDeletionSpreadOverPagesIsHeldBeforeAnyOfItGoes() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("deletion-guard-pages")
        let logs = try TempFolder("deletion-guard-pages-logs")
        defer { folder.remove(); logs.remove() }
        let ids = (0..<2_500).map { "p\($0)" }
        for chunk in stride(from: 0, to: ids.count, by: 500) {
            let documents = ids[chunk..<chunk + 500].map { #"{"id":"\#($0)","docType":"note"}"# }.joined(separator: ",")
            #expect(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(documents)]}"#).status == 200)
        }
        var agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(60)) { (try? await AgentStatus.read(root: folder.path))?.counts.synced == ids.count })
        try await agent.stop()
        // Offline, 2,000 of 2,500 are deleted on the server: the catch-up pull is two pages.
        for chunk in stride(from: 0, to: 2_000, by: 500) { try await deleteOnServer(server, Array(ids[chunk..<chunk + 500])) }
        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(30)) { (try? await AgentStatus.read(root: folder.path))?.heldDeletions == 2_000 },
                "\(agent.logs.all.suffix(4))")
        #expect(ids.allSatisfy { folder.exists("note/\($0).json") }, "no file went to the trash")
        // A pull over pages that stays under the rule applies every page's deletions.
        try await agent.stop()
        #expect(try await runDocsync(["resolve", "--deletions", "restore", folder.path], logDirectory: logs.path).0 == 0)
        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(30)) { (try? await AgentStatus.read(root: folder.path))?.inSync() == true })
        try await agent.stop()
        for chunk in stride(from: 0, to: 1_100, by: 550) { try await deleteOnServer(server, Array(ids[chunk..<chunk + 550])) }
        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(30)) { ids.prefix(1_100).allSatisfy { !folder.exists("note/\($0).json") } }, "\(agent.logs.all.suffix(4))")
        // The files go first and the held rows are released after each batch: the count follows.
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.heldDeletions == 0 })
        try await agent.stop()
        await server.stop()
    }
}
