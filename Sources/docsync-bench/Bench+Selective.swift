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
    /// The same type's changes asked for as "all but the nine others": the store filters the
    /// whole sequence (the way without the type index), for the same documents.
    var scanSeconds = Double.nan
    var scanReceived = 0
    /// A type with a hundredth of the documents, alone.
    var rareSeconds = Double.nan
    var rareReceived = 0
    /// Server CPU seconds each pull cost.
    var allServerCPU = Double.nan
    var oneServerCPU = Double.nan
    var scanServerCPU = Double.nan
    var rareServerCPU = Double.nan
    var serverRSS = 0
}

/// 10. Selective pull: a server of its own holding `selectiveDocs` documents spread evenly over
/// ten docTypes, and a rare eleventh type with a hundredth of them; a client pages through every
/// change from the start, then through one type's alone, then the same type's as "all but the
/// others" (the whole sequence filtered), then the rare type's. A type's pull should cost in
/// proportion to its documents: the store reads its changes from the (doc_type, seq) index.
extension Bench {
    static let selectiveTypes = 10

    func measureSelective(work: TempFolder, results: inout Results) async throws {
        guard selectiveDocs > 0 else { return }
        log("selective pull: \(selectiveDocs) documents of \(Self.selectiveTypes) types")
        let (server, api) = try await freshServer(work: work, name: "serve-selective")
        defer { stop(server, data: work.file("serve-selective")) }
        var run = SelectiveRun(documents: selectiveDocs, types: Self.selectiveTypes)
        let batch = 1000
        let rareEvery = 100
        for start in stride(from: 0, to: selectiveDocs, by: batch) {
            let docs = (start..<min(start + batch, selectiveDocs)).map { i in
                document(i, prefix: "s", type: "type\(i % Self.selectiveTypes)")
            } + (start..<min(start + batch, selectiveDocs)).filter { $0 % rareEvery == 0 }.map { document($0, prefix: "r", type: "rare") }
            let reply = try await api.request("POST", "/api/sync", body: #"{"since":0,"echo":false,"documents":[\#(docs.joined(separator: ","))]}"#)
            guard reply.status == 200 else { throw ProcessFailure("loading the selective run: \(reply.status)") }
        }
        let others = (0..<Self.selectiveTypes).filter { $0 != 3 }.map { "\"type\($0)\"" } + ["\"rare\""]
        (run.allReceived, run.allSeconds, run.allServerCPU) = try await timed(api, server, selection: "")
        (run.oneReceived, run.oneSeconds, run.oneServerCPU) = try await timed(api, server, selection: #""types":["type3"],"#)
        (run.scanReceived, run.scanSeconds, run.scanServerCPU) = try await timed(
            api, server, selection: #""exclude_types":[\#(others.joined(separator: ","))],"#)
        (run.rareReceived, run.rareSeconds, run.rareServerCPU) = try await timed(api, server, selection: #""types":["rare"],"#)
        run.serverRSS = ProcessStats.read(pid: server.pid)?.peakRSSBytes ?? -1
        results.selective = run
        log("selective pull: all \(run.allReceived) in \(fmt(run.allSeconds, 2)) s; one type \(run.oneReceived) in \(fmt(run.oneSeconds, 2)) s")
    }

    /// One pull from the start: documents received, seconds, server CPU seconds.
    private func timed(_ api: APIClient, _ server: DocsyncProcess, selection: String) async throws -> (Int, Double, Double) {
        let before = ProcessStats.read(pid: server.pid)
        let started = now()
        let received = try await pageThrough(api, selection: selection)
        let elapsed = seconds(since: started)
        let cpu = (ProcessStats.read(pid: server.pid)?.cpuSeconds ?? .nan) - (before?.cpuSeconds ?? .nan)
        return (received, elapsed, cpu)
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
