import AsyncHTTPClient
import DocsyncModel
import DocsyncTestSupport
import Foundation
import GRDB
import NIOCore

/// 8. Kinto: the agent's import into a real Kinto (memory backend) beside Kinto's own limit, the
/// same records sent through `/v1/batch` by an in-process client in the shape the agent uses
/// (25 a call, 4 calls in flight), into a second Kinto as empty as the first was. Kinto, a Python server, is the bottleneck here: the ratio says
/// how much of it the agent leaves unused.
extension Bench {
    func measureKinto(work: TempFolder, results: inout Results) async throws {
        guard kintoDocs > 0 else { return }
        log("Kinto: \(kintoDocs) documents")
        let server = try await KintoServer.start()
        defer { Task { await server.stop() } }
        let credential = "bench:bench-password"
        try work.write("kinto-credential", credential + "\n")
        let dir = work.file("kinto-docs")
        for i in 0..<kintoDocs { try write(document(i, prefix: "k", type: "kbench"), to: "\(dir)/kbench/g\(i / 100)/k\(i).json") }
        sync()
        let auth = "Basic " + Data(credential.utf8).base64EncodedString()
        let start = now()
        let agent = try DocsyncProcess(
            ["watch", dir, "--endpoint", server.endpoint(bucket: "bench"), "--token-file", work.file("kinto-credential"), "--log-level", "warning"],
            logDirectory: work.path, name: "watch-kinto")
        // Watched through the agent's index (every file recorded, the outbox empty: Kinto
        // acknowledged every write), not by asking Kinto, whose few threads the agent's writes need.
        try await waitForDelivered(in: dir, count: kintoDocs, process: agent)
        results.kintoImportDocsPerSecond = Double(kintoDocs) / seconds(since: start)
        await agent.stop()
        let stored = try await kintoCount(server.url + "/buckets/bench/collections/kbench/records", auth: auth)
        guard stored == kintoDocs else { throw ProcessFailure("Kinto holds \(stored) of the \(kintoDocs) records") }
        // The raw rate on a Kinto of its own, as empty as the agent's was.
        let rawServer = try await KintoServer.start()
        defer { Task { await rawServer.stop() } }
        results.kintoRawDocsPerSecond = try await kintoRawBatch(rawServer.url, auth: auth)
        log("Kinto import \(fmt(results.kintoImportDocsPerSecond, 0))/s, raw batch \(fmt(results.kintoRawDocsPerSecond, 0))/s")
    }

    /// Waits until the agent's index records `count` files in `folder` and nothing is queued.
    private func waitForDelivered(in folder: String, count: Int, process: DocsyncProcess) async throws {
        try await waitForRecordedFiles(in: folder, atLeast: count, process: process)
        let db = try readOnly(folder + "/.docsync/index.sqlite")
        while try await db.read({ try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }) > 0 {
            guard process.isRunning else { throw ProcessFailure("agent exited: \(process.stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `Total-Objects` of a records list (a `HEAD`).
    private func kintoCount(_ url: String, auth: String) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .HEAD
        request.headers.add(name: "Authorization", value: auth)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return response.headers.first(name: "Total-Objects").flatMap(Int.init) ?? 0
    }

    /// The same records into another bucket through `/v1/batch`, 25 a call, 4 calls in flight.
    private func kintoRawBatch(_ api: String, auth: String) async throws -> Double {
        func post(_ path: String, _ body: String, method: String = "POST", headers: [(String, String)] = []) async throws -> Int {
            var request = HTTPClientRequest(url: api + path)
            request.method = .init(rawValue: method)
            request.headers.add(name: "Authorization", value: auth)
            request.headers.add(name: "Content-Type", value: "application/json")
            for (k, v) in headers { request.headers.add(name: k, value: v) }
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 64 << 20)
            return Int(response.status.code)
        }
        _ = try await post("/buckets/raw", #"{"data":{}}"#, method: "PUT")
        _ = try await post("/buckets/raw/collections/kbench", #"{"data":{}}"#, method: "PUT")
        let calls = stride(from: 0, to: kintoDocs, by: 25).map { first in
            (first..<min(first + 25, kintoDocs)).map { i -> String in
                var data = try! JSONParser.parse(document(i, prefix: "k", type: "kbench")).object!
                data["id"] = nil
                data["docType"] = nil
                return #"{"method":"PUT","path":"/buckets/raw/collections/kbench/records/k\#(i)","headers":{"If-None-Match":"*"},"body":{"data":\#(JSONWriter.string(.object(data)))}}"#
            }
        }
        let start = now()
        try await withThrowingTaskGroup(of: Int.self) { group in
            var iterator = calls.makeIterator()
            for _ in 0..<4 { if let c = iterator.next() { group.addTask { try await post("/batch", #"{"requests":[\#(c.joined(separator: ","))]}"#) } } }
            while let status = try await group.next() {
                guard status == 200 else { throw ProcessFailure("Kinto's batch answered \(status)") }
                if let c = iterator.next() { group.addTask { try await post("/batch", #"{"requests":[\#(c.joined(separator: ","))]}"#) } }
            }
        }
        return Double(kintoDocs) / seconds(since: start)
    }
}
