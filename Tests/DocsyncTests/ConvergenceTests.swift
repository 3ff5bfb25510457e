import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Random creates, edits, moves and deletes in three folders, agents stopped and restarted at
/// random: at the end every folder equals the server's live documents, and every edit made is in a
/// document or a conflict copy. `DOCSYNC_CONVERGENCE_SEED` replays a run, `..._ROUNDS` lengthens it.
extension HeavySuites {
@Suite(.serialized) struct ConvergenceTests {
    struct Edit { var id: String; var field: String; var value: String; var step: Int }

    /// Content without key order: each folder keeps its own files' order, by design.
    func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let o): .object(JSONObject(o.members.sorted { $0.key < $1.key }.map { (key: $0.key, value: canonical($0.value)) }))
        case .array(let a): .array(a.map(canonical))
        default: value
        }
    }

    func canonical(_ docs: [String: JSONObject]) -> [String: JSONValue] { docs.mapValues { canonical(.object($0)) } }

    @Test func foldersConvergeAndNoEditIsLost() async throws {
        let env = ProcessInfo.processInfo.environment
        let seed = env["DOCSYNC_CONVERGENCE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max / 2)
        let rounds = env["DOCSYNC_CONVERGENCE_ROUNDS"].flatMap(Int.init) ?? 30
        var rng = SeededGenerator(seed: seed)
        let work = try TempFolder("converge")
        defer { work.remove() }
        try work.write("token", "converge-token\n")
        let server = try DocsyncProcess(["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")], logDirectory: work.path, name: "serve")
        let url = try await server.firstLine()
        let api = APIClient(baseURL: url, token: "converge-token")
        let folders = try (0..<3).map { try TempFolder("converge-\($0)") }
        defer { folders.forEach { $0.remove() } }
        var starts = 0
        func start(_ k: Int) throws -> DocsyncProcess {
            starts += 1
            return try DocsyncProcess(["watch", folders[k].path, "--endpoint", url, "--token-file", work.file("token"), "--log-level", "warning"],
                                      logDirectory: work.path, name: "agent\(k)-\(starts)")
        }
        var agents: [DocsyncProcess?] = try (0..<3).map { try start($0) }
        for i in 0..<12 { try folders[0].write("items/seed\(i).json", #"{"id":"seed\#(i)","docType":"item","title":"seed"}"#) }

        var edits: [Edit] = []
        var deletions: [String: Int] = [:]  // id → step of its latest delete
        var step = 0
        func documents(in folder: TempFolder) -> [(path: String, id: String)] {
            DocsyncWatcherProbe.walk(folder.path).compactMap { path, _ in (try? idOf(folder, path)).flatMap { $0 }.map { (path, $0) } }
        }
        for round in 0..<rounds {
            for _ in 0..<4 {
                step += 1
                let k = Int.random(in: 0..<3, using: &rng)
                let folder = folders[k]
                let docs = documents(in: folder)
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<20:
                    try folder.write("items/r\(round)s\(step).json", #"{"id":"r\#(round)s\#(step)","docType":"item","title":"new"}"#)
                case 20..<55 where !docs.isEmpty:
                    let (path, id) = docs[Int.random(in: 0..<docs.count, using: &rng)]
                    let field = Int.random(in: 0..<4, using: &rng) == 0 ? "title" : "f\(step)"
                    let value = "v\(step)-by-\(k)"
                    // Gone meanwhile (deleted elsewhere and trashed by the agent): no edit.
                    guard (try? carefulEdit(folder, path) { $0[field] = .string(value) }) != nil else { continue }
                    edits.append(Edit(id: id, field: field, value: value, step: step))
                case 55..<70 where !docs.isEmpty:
                    let (path, _) = docs[Int.random(in: 0..<docs.count, using: &rng)]
                    try? folder.move(path, "moved/\(step)-\(path.split(separator: "/").last!)")
                case 70..<80 where !docs.isEmpty:
                    let (path, id) = docs[Int.random(in: 0..<docs.count, using: &rng)]
                    try? folder.remove(path)
                    deletions[id] = step
                case 80..<90:
                    if let agent = agents[k] {
                        await agent.stop()
                        agents[k] = nil
                    } else {
                        agents[k] = try start(k)
                    }
                default:
                    break
                }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...150, using: &rng)))
        }
        for k in 0..<3 where agents[k] == nil { agents[k] = try start(k) }

        func liveOnServer() async -> [String: JSONObject]? {
            guard let docs = try? await api.documents(type: "item") else { return nil }
            var live: [String: JSONObject] = [:]
            for (id, var d) in docs where d["deleted_at"] == nil {
                for key in DocumentRules.reservedKeys { d[key] = nil }
                live[id] = d
            }
            return live
        }
        let converged = await eventually(timeout: .seconds(90), every: .milliseconds(200)) {
            guard let live = await liveOnServer() else { return false }
            return folders.allSatisfy { (try? folderDocuments($0.path)).map(canonical) == canonical(live) }
        }
        let live = await liveOnServer() ?? [:]
        if !converged {
            var report = "seed \(seed): folders differ from the server\n"
            for (k, folder) in folders.enumerated() {
                let docs = (try? folderDocuments(folder.path)) ?? [:]
                for id in Set(docs.keys).union(live.keys).sorted() where docs[id].map({ canonical(.object($0)) }) != live[id].map({ canonical(.object($0)) }) {
                    report += "folder \(k) \(id): \(docs[id].map { JSONWriter.string(.object($0)) } ?? "absent") / server: \(live[id].map { JSONWriter.string(.object($0)) } ?? "absent")\n"
                }
            }
            for k in 0..<3 { report += "agent \(k) log: " + (agents[k]?.stderr.suffix(1500) ?? "") + "\n" }
            Issue.record(Comment(rawValue: report))
        }
        // Every edit is in its document or in a conflict copy, unless a later delete removed it.
        var copies: [JSONObject] = []
        for folder in folders {
            let names = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String }.filter { $0.contains(".sync-conflict-") } ?? []
            copies += names.compactMap { try? DocumentRules.parseObject(Array(folder.bytes($0))) }
        }
        // The latest edit of each field must survive (earlier ones may be overwritten by it). An
        // edit followed by a delete of its document is superseded by that delete, even when a
        // concurrent edit elsewhere brings the document back (edit beats delete): the document
        // returns with the content the deleting side and the editing side had.
        var latest: [String: Edit] = [:]
        for edit in edits { latest["\(edit.id)/\(edit.field)"] = edit }
        for edit in latest.values.sorted(by: { $0.step < $1.step }) {
            if let deletedAt = deletions[edit.id], deletedAt > edit.step { continue }
            let inDocument = live[edit.id]?[edit.field] == .string(edit.value)
            let inCopy = copies.contains { $0["id"] == .string(edit.id) && $0[edit.field] == .string(edit.value) }
            #expect(inDocument || inCopy, "seed \(seed): edit \(edit.field)=\(edit.value) of \(edit.id) at step \(edit.step) is lost; deleted at step \(deletions[edit.id].map(String.init) ?? "never"); on the server: \(live[edit.id].map { JSONWriter.string(.object($0)) } ?? "not live")")
        }
        for agent in agents { await agent?.stop() }
        await server.stop()
    }
}
}
