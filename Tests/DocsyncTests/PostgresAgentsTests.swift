import DocsyncTestSupport
import Foundation
import Testing

/// Sixty agents on two nodes of one PostgreSQL database (issue 40, item 5). Sessions used to wait
/// minutes on the documents' advisory locks, every agent logged timeouts, and edits were stored
/// again and again (revisions up to 19 for one edit).
extension HeavySuites {
@Suite(.serialized) struct PostgresAgentsTests {
    @Test func sixtyAgentsOnTwoNodesConvergeWithoutATimeoutAndOneRevisionAnEdit() async throws {
        let work = try TempFolder("pg-agents")
        defer { work.remove() }
        let token = "agents-token"
        try work.write("token", token + "\n")
        let (nodes, urls) = try await PostgresCluster.shared().serveNodes(2, work: work, tokenFile: work.file("token"), name: "node")
        defer { Task { for node in nodes { await node.stop() } } }

        let load = AgentsLoad(urls: urls, tokenFile: work.file("token"), agents: 60, documentsEach: 2)
        let outcome = try await load.run(in: work, token: token, timeout: .seconds(180))

        #expect(outcome.converged, "every folder holds every document and every edit")
        #expect(outcome.timeouts.isEmpty, "\(outcome.timeouts.prefix(5))")
        #expect(outcome.revisionsExact, "highest revision \(outcome.highestRevision)")
        #expect(outcome.serverChanges == Int64(2 * outcome.documents), "nothing stored twice: \(outcome.serverChanges) changes")
        for node in nodes { #expect(!node.stderr.lowercased().contains("timeout"), "\(node.stderr.suffix(600))") }
    }
}
}
