import DocsyncTestSupport
import Foundation
import Testing

/// Sixty agents on two nodes of one PostgreSQL database (issue 40, item 5). Sessions used to wait
/// minutes on the documents' advisory locks, every agent logged timeouts, and edits were stored
/// again and again (revisions up to 19 for one edit).
extension HeavySuites {
@Suite(.serialized) struct PostgresAgentsTests {
    @Test func sixtyAgentsOnTwoNodesConvergeWithoutATimeoutAndOneRevisionAnEdit() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        let work = try TempFolder("pg-agents")
        defer { work.remove() }
        let token = "agents-token"
        try work.write("token", token + "\n")
        let url = "postgres://postgres@127.0.0.1:\(cluster.port)/\(database)"
        let nodes = try (1...2).map { n in
            try DocsyncProcess(
                ["serve", "--data", work.file("data\(n)"), "--port", "0", "--token-file", work.file("token"), "--database", url, "--log-level", "warning"],
                logDirectory: work.path, name: "node\(n)")
        }
        defer { Task { for node in nodes { await node.stop() } } }
        let urls = [try await nodes[0].firstLine(), try await nodes[1].firstLine()]

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
