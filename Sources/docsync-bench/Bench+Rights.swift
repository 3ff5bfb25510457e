import DocsyncModel
import DocsyncTestSupport
import Foundation

/// The cost of rights per token: the same batched writes and full pull on a server whose token
/// file is one token with every right, and on one whose file holds 100 tokens with rights (the
/// client's token among them, `read:* write:bench-raw-batch`), rounds alternating which goes
/// first, each on an empty server of its own.
struct RightsRun {
    var documents = 0
    /// Per round: (writes docs/s, pull docs/s) without rights, then with them.
    var plain: [(writes: Double, pull: Double)] = []
    var limited: [(writes: Double, pull: Double)] = []

    var table: String {
        func ratio(_ key: KeyPath<(writes: Double, pull: Double), Double>) -> Double {
            percentile(zip(limited, plain).map { $0[keyPath: key] / $1[keyPath: key] }, 50)
        }
        let rows = zip(plain, limited).enumerated().map { i, pair in
            "| \(i + 1) | \(fmt(pair.0.writes, 0)) | \(fmt(pair.1.writes, 0)) | \(fmt(pair.0.pull, 0)) | \(fmt(pair.1.pull, 0)) |"
        }
        return """
            ## rights run: \(documents) documents written in batches of 500 (4 in flight), then pulled whole

            | round | writes, 1 token, docs/s | writes, 100 tokens with rights | pull, 1 token, docs/s | pull, 100 tokens with rights |
            |---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))

            Median with rights / without: writes \(fmt(ratio(\.writes), 2))×, pull \(fmt(ratio(\.pull), 2))×.
            """
    }
}

extension Bench {
    func measureRights(count: Int, work: TempFolder) async throws -> RightsRun {
        var run = RightsRun(documents: count)
        var lines = (0..<99).map { "user\($0) tok-user-\($0)-\(UUID().uuidString) read:note\($0 % 7) write:note\($0 % 7) create:report" }
        lines.insert("bench tok-bench read:* write:bench-raw-batch", at: 50)
        try work.write("rights-tokens", lines.joined(separator: "\n") + "\n")
        try work.write("plain-tokens", "bench tok-bench\n")
        for round in 0..<rounds {
            for limited in round % 2 == 0 ? [false, true] : [true, false] {
                let figures = try await writeAndPull(count: count, tokenFile: work.file(limited ? "rights-tokens" : "plain-tokens"), work: work)
                if limited { run.limited.append(figures) } else { run.plain.append(figures) }
                log("rights run, round \(round + 1): \(limited ? "100 tokens with rights" : "1 token"): writes \(fmt(figures.writes, 0))/s, pull \(fmt(figures.pull, 0))/s")
            }
        }
        return run
    }

    /// On an empty server of its own with `tokenFile`: `count` documents in batches, then every
    /// change pulled from the start by another client, a page at a time.
    private func writeAndPull(count: Int, tokenFile: String, work: TempFolder) async throws -> (writes: Double, pull: Double) {
        let data = work.file("serve-rights")
        try? FileManager.default.removeItem(atPath: data)
        let server = try DocsyncProcess(
            ["serve", "--data", data, "--port", "0", "--token-file", tokenFile, "--log-level", "warning"], logDirectory: work.path, name: "serve-rights")
        defer { stop(server, data: data) }
        let api = APIClient(baseURL: try await server.firstLine(), token: "tok-bench")
        let writeStart = now()
        try await syncAll(api: api, count: count, batch: 500, inFlight: 4)
        let writes = Double(count) / seconds(since: writeStart)
        let pullStart = now()
        var (since, pulled) = (Int64(0), 0)
        while true {
            let reply = try await api.request("POST", "/api/sync", body: #"{"since":\#(since),"echo":false}"#, headers: [("X-Docsync-Client", "puller")])
            guard let object = reply.json?.object, case .number(let cursor)? = object["cursor"], let next = Int64(cursor) else {
                throw ProcessFailure("pull refused: \(reply.status) \(reply.text.prefix(200))")
            }
            pulled += object["documents"]?.object?["success"]?.elements?.count ?? 0
            since = next
            if object["more"] != true { break }
        }
        guard pulled == count else { throw ProcessFailure("pulled \(pulled) of \(count)") }
        return (writes, Double(count) / seconds(since: pullStart))
    }
}
