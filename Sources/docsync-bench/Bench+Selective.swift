import DocsyncModel
import DocsyncTestSupport
import Foundation

/// The server's answer to a pull of one docType among several, beside a pull of everything.
struct SelectiveRun {
    var documents = 0
    var types = 0
    /// Every change, paged through `/api/sync` from the start.
    var allSeconds = Double.nan
    var allReceived = 0
    /// One type's changes alone (`"types": [T]`).
    var oneSeconds = Double.nan
    var oneReceived = 0
    /// Server CPU seconds each pull cost.
    var allServerCPU = Double.nan
    var oneServerCPU = Double.nan
    var serverRSS = 0
}

/// 10. Selective pull: a server of its own holding `selectiveDocs` documents spread evenly over
/// ten docTypes; a client pages through every change from the start, then through one type's
/// alone. The second should cost about a tenth of the first: the store reads that type's changes
/// from its (doc_type, seq) index rather than filtering the whole sequence.
extension Bench {
    static let selectiveTypes = 10

    func measureSelective(work: TempFolder, results: inout Results) async throws {
        guard selectiveDocs > 0 else { return }
        log("selective pull: \(selectiveDocs) documents of \(Self.selectiveTypes) types")
        let (server, api) = try await freshServer(work: work, name: "serve-selective")
        defer { stop(server, data: work.file("serve-selective")) }
        var run = SelectiveRun(documents: selectiveDocs, types: Self.selectiveTypes)
        let batch = 1000
        for start in stride(from: 0, to: selectiveDocs, by: batch) {
            let docs = (start..<min(start + batch, selectiveDocs)).map { document($0, prefix: "s", type: "type\($0 % Self.selectiveTypes)") }
            let reply = try await api.request("POST", "/api/sync", body: #"{"since":0,"echo":false,"documents":[\#(docs.joined(separator: ","))]}"#)
            guard reply.status == 200 else { throw ProcessFailure("loading the selective run: \(reply.status)") }
        }
        let before = ProcessStats.read(pid: server.pid)
        let started = now()
        run.allReceived = try await pageThrough(api, selection: "")
        run.allSeconds = seconds(since: started)
        let middle = ProcessStats.read(pid: server.pid)
        let oneStarted = now()
        run.oneReceived = try await pageThrough(api, selection: #""types":["type3"],"#)
        run.oneSeconds = seconds(since: oneStarted)
        let after = ProcessStats.read(pid: server.pid)
        run.allServerCPU = (middle?.cpuSeconds ?? .nan) - (before?.cpuSeconds ?? .nan)
        run.oneServerCPU = (after?.cpuSeconds ?? .nan) - (middle?.cpuSeconds ?? .nan)
        run.serverRSS = after?.peakRSSBytes ?? -1
        results.selective = run
        log("selective pull: all \(run.allReceived) in \(fmt(run.allSeconds, 2)) s; one type \(run.oneReceived) in \(fmt(run.oneSeconds, 2)) s")
    }

    /// Pages through `/api/sync` from the start; the documents received.
    private func pageThrough(_ api: APIClient, selection: String) async throws -> Int {
        var (cursor, received) = (Int64(0), 0)
        while true {
            let reply = try await api.request("POST", "/api/sync", body: #"{"since":\#(cursor),\#(selection)"documents":[]}"#)
            guard reply.status == 200, let object = reply.json?.object, case .number(let c)? = object["cursor"], let next = Int64(c),
                  case .array(let documents)? = object["documents"]?.object?["success"]
            else { throw ProcessFailure("selective pull: \(reply.status)") }
            received += documents.count
            cursor = next
            if object["more"] != .bool(true) { return received }
        }
    }
}
