import DocsyncPostgres
import DocsyncTestSupport
import Foundation
import Logging
import Testing

/// A node and its database going away: the database is reached through a `TCPGate` the test
/// shuts and opens, while the cluster itself stays up for every other test.
extension LongSuites.PostgresNodesTests {
    /// Regression (issue 40): a node started while its database was away exited after ~70 s
    /// (`connectionCreationCircuitBreakerTripped`), and during an outage `GET /api/stats` hung 18 s
    /// and more. Now the node serves at once and answers 503 with `Retry-After` while the database
    /// is away, within its call deadline; serves again once the database is back; and stops
    /// promptly when asked, outage or not.
    @Test func aNodeAnswers503WhileItsDatabaseIsAwayAndServesWhenItIsBack() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        let gate = TCPGate(upstreamPort: cluster.port)
        var logger = Logger(label: "node")
        logger.logLevel = .critical
        let store = ReconnectingStore(deadline: .seconds(2), logger: logger) { [logger] in
            try await PostgresDocumentStore(
                configuration: .init(host: "127.0.0.1", port: gate.port, username: "postgres", password: nil, database: database, tls: .disable),
                logger: logger)
        }
        let node = try await node(store: store, logger: logger)
        let api = APIClient(baseURL: node.url, token: token)

        let away = try await api.request("GET", "/api/stats")
        #expect(away.status == 503, "\(away.text)")
        #expect(away.headers.contains { $0.0.lowercased() == "retry-after" && $0.1 == "2" }, "\(away.headers)")

        try gate.open()
        #expect(await eventually(timeout: .seconds(30)) { (try? await api.request("GET", "/api/stats"))?.status == 200 })
        #expect(try await api.request("PUT", "/api/document", body: #"{"id":"before","docType":"note"}"#).status == 200)

        gate.shut()
        let asked = ContinuousClock.now
        let during = try await api.request("GET", "/api/stats")
        let answeredIn = ContinuousClock.now - asked
        #expect(during.status == 503, "\(during.text)")
        #expect(answeredIn < .seconds(5), "within the call deadline, not after the pool's retries: \(answeredIn)")

        try gate.open()
        #expect(await eventually(timeout: .seconds(30)) {
            (try? await api.request("PUT", "/api/document", body: #"{"id":"after","docType":"note"}"#))?.status == 200
        })
        #expect(try await api.documents(type: "note").keys.sorted() == ["after", "before"])

        gate.shut()
        let stopping = ContinuousClock.now
        await node.stop()
        _ = await node.running.result
        await store.close()
        #expect(ContinuousClock.now - stopping < .seconds(10))
    }
}
