import DocsyncTestSupport
import Foundation

/// The server's raw ingest, from an in-process client: the baselines of the import.
extension Bench {
    /// Posts `count` documents to `/api/sync`, `batch` per call and `inFlight` calls at a time, as a
    /// client of its own that starts from the current cursor, asking for acknowledgements rather
    /// than its documents back (as the agent does).
    func syncAll(api: APIClient, count: Int, batch: Int, inFlight: Int, prefix: String = "rawb", client: String = "bench-raw-\(UUID().uuidString)") async throws {
        let headers = [("X-Docsync-Client", client)]
        // A cursor past the end: the reply carries the real one, and none of the earlier history.
        let first = try await api.request("POST", "/api/sync", body: #"{"since":9007199254740991,"documents":[]}"#, headers: headers)
        guard case .number(let start)? = first.json?.object?["cursor"], var cursor = Int64(start) else {
            throw ProcessFailure("no cursor in the sync reply: \(first.text)")
        }
        let batches = stride(from: 0, to: count, by: batch).map { $0..<min($0 + batch, count) }
        try await withThrowingTaskGroup(of: Int64.self) { group in
            var next = 0
            func add() {
                let range = batches[next]
                next += 1
                let documents = range.map { document($0, prefix: prefix, type: "bench-raw-batch") }.joined(separator: ",")
                group.addTask { [cursor] in
                    let reply = try await api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"echo":false,"documents":[\#(documents)]}"#, headers: headers)
                    guard reply.status == 200, case .number(let after)? = reply.json?.object?["cursor"], let value = Int64(after) else {
                        throw ProcessFailure("sync refused: \(reply.status) \(reply.text)")
                    }
                    return value
                }
            }
            for _ in 0..<min(inFlight, batches.count) { add() }
            while let after = try await group.next() {
                cursor = max(cursor, after)
                if next < batches.count { add() }
            }
        }
    }

    func putAll(api: APIClient, count: Int, concurrency: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                let i = next
                next += 1
                let body = document(i, prefix: "raw", type: "bench-raw")
                group.addTask { _ = try await api.request("PUT", "/api/document", body: body) }
            }
            for _ in 0..<min(concurrency, count) { add() }
            while try await group.next() != nil { if next < count { add() } }
        }
    }
}
