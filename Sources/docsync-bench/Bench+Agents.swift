import DocsyncTestSupport
import Foundation

/// 11. Many agents on two servers on one PostgreSQL database, beside the same agents on one server
/// on SQLite: each agent creates its documents, then edits each once; every folder follows every
/// document. The run times how long until every folder holds every document and every edit, and
/// checks that no agent logged a timeout and each document ended at revision 2.
extension Bench {
    static let agentDocuments = 20

    func measureAgents(work: TempFolder, results: inout Results) async throws {
        guard agents > 0 else { return }
        log("agents: \(agents) agents on 2 servers on PostgreSQL, then on 1 server on SQLite")
        let token = try token(work: work)
        let (pgNodes, pgURLs) = try await PostgresCluster.shared().serveNodes(2, work: work, tokenFile: work.file("token"), name: "agents-pg")
        let folders = [try TempFolder("bench-agents-pg"), try TempFolder("bench-agents-sqlite")]
        defer { for f in folders { f.remove() } }
        results.postgresAgents = try await AgentsLoad(urls: pgURLs, tokenFile: work.file("token"), agents: agents, documentsEach: Self.agentDocuments)
            .run(in: folders[0], token: token)
        for node in pgNodes { await node.stop() }
        let sqliteNode = try DocsyncProcess(
            ["serve", "--data", work.file("agents-sqlite"), "--port", "0", "--token-file", work.file("token"), "--log-level", "warning"],
            logDirectory: work.path, name: "agents-sqlite")
        results.sqliteAgents = try await AgentsLoad(urls: [try await sqliteNode.firstLine()], tokenFile: work.file("token"), agents: agents, documentsEach: Self.agentDocuments)
            .run(in: folders[1], token: token)
        await sqliteNode.stop()
        log("agents: PostgreSQL ×2 \(fmt(results.postgresAgents.editSeconds, 1)) s, SQLite ×1 \(fmt(results.sqliteAgents.editSeconds, 1)) s for every edit everywhere")
    }
}
