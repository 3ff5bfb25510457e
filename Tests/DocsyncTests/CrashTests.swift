import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// `kill -9` at random instants — mid index write, mid request, between a reply and its record —
/// and after the last restart the server holds exactly the folder: same ids, same content,
/// tombstones for exactly the deleted files, no document created twice, no half-written id.
///
/// 25 rounds by default (CI); `DOCSYNC_CRASH_ROUNDS=500` for a long local run,
/// `DOCSYNC_CRASH_SEED=<n>` to replay one.
extension LongSuites {
@Suite(.serialized) struct CrashTests {
    struct Model {
        var rng: SeededGenerator
        /// Path → id, where the test knows it (files created without an id learn it from the agent).
        var files: [String: String?] = [:]
        var deleted = Set<String>()
        /// Deleted ids the server had never seen: a file deleted before the agent looked at it
        /// leaves no tombstone, and need not.
        var deletedUnseen = Set<String>()
        var onServer = Set<String>()

        mutating func pick(where condition: (String, String?) -> Bool) -> (String, String)? {
            let candidates = files.filter { condition($0.key, $0.value) }.compactMap { k, v in v.map { (k, $0) } }.sorted { $0.0 < $1.0 }
            guard !candidates.isEmpty else { return nil }
            return candidates[Int.random(in: 0..<candidates.count, using: &rng)]
        }
    }

    @Test func killNineAtRandomMomentsLosesNothingAndDuplicatesNothing() async throws {
        let env = ProcessInfo.processInfo.environment
        let rounds = env["DOCSYNC_CRASH_ROUNDS"].flatMap(Int.init) ?? 25
        let seed = env["DOCSYNC_CRASH_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max / 2)
        var model = Model(rng: SeededGenerator(seed: seed))
        let work = try TempFolder("crash-work")
        let docs = try TempFolder("crash-docs")
        defer { work.remove(); docs.remove() }
        try work.write("token", "crash-token\n")
        let server = try DocsyncProcess(["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")], logDirectory: work.path, name: "serve")
        let url = try await server.firstLine()
        let api = APIClient(baseURL: url, token: "crash-token")

        for i in 0..<2000 {
            if i % 5 == 0 {
                try docs.write("noid/start/s\(i).json", #"{"docType":"item","n":\#(i)}"#)
                model.files["noid/start/s\(i).json"] = .some(nil)
            } else {
                try docs.write("items/start/s\(i).json", #"{"id":"s\#(i)","docType":"item","n":\#(i)}"#)
                model.files["items/start/s\(i).json"] = "s\(i)"
            }
        }

        for round in 0..<rounds {
            // Files the agent gave ids to: learn them, but trust only those the server has (an id
            // written into a file just before a kill may never have been recorded or sent).
            model.onServer = Set(try await api.documents(type: "item").keys)
            for (path, id) in model.files where id == nil {
                if let found = try? idOf(docs, path), model.onServer.contains(found) { model.files[path] = found }
            }
            let agent = try DocsyncProcess(["watch", docs.path, "--endpoint", url, "--token-file", work.file("token"), "--log-level", "warning"],
                                           logDirectory: work.path, name: "watch-\(round)")
            let killAfter = Duration.milliseconds(Int.random(in: 0...900, using: &model.rng))
            let killer = Task {
                try? await Task.sleep(for: killAfter)
                agent.signal(SIGKILL)
            }
            try applyOperations(round: round, model: &model, docs: docs, count: 40)
            await killer.value
            await agent.wait()
            try applyOperations(round: round * 1000 + 1, model: &model, docs: docs, count: 10)  // while it is down
        }

        let final = try DocsyncProcess(["watch", docs.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-final")
        let converged = await eventually(timeout: .seconds(120)) {
            await serverMatchesFolder(docs.path, api: api, types: ["item"], deleted: model.deleted, mayBeAbsent: model.deletedUnseen)
        }
        let onServer = try await api.documents(type: "item")
        let inFolder = try folderDocuments(docs.path)
        if !converged {
            let live = Set(onServer.filter { $0.value["deleted_at"] == nil }.keys)
            let tombstones = Set(onServer.filter { $0.value["deleted_at"] != nil }.keys)
            let missing = Set(inFolder.keys).subtracting(live)
            let differing = inFolder.filter { id, doc in
                guard var s = onServer[id] else { return false }
                for key in DocumentRules.reservedKeys { s[key] = nil }
                return s != doc
            }.map(\.key)
            Issue.record("""
                seed \(seed): after \(rounds) kill -9 rounds the server differs from the folder.
                live on server but not in folder: \(live.subtracting(inFolder.keys).sorted().prefix(20))
                in folder, not live on server: \(missing.sorted().prefix(20)) (\(missing.count))
                content differs: \(differing.sorted().prefix(20))
                deleted after reaching the server, without tombstone: \(model.deleted.subtracting(model.deletedUnseen).subtracting(tombstones).sorted().prefix(20))
                tombstones not deleted: \(tombstones.subtracting(model.deleted).sorted().prefix(20))
                final agent: \(final.stderr.suffix(3000))
                status: \((try? await runDocsync(["status", docs.path], logDirectory: work.path))?.1 ?? "")
                """)
        }
        let tombstoneCount = onServer.values.filter { $0["deleted_at"] != nil }.count
        #expect(onServer.count == inFolder.count + tombstoneCount, "seed \(seed): no document created twice")
        #expect(inFolder.count == model.files.count, "every file is a valid document with an id")
        let leftovers = FileManager.default.enumerator(atPath: docs.path)?.compactMap { $0 as? String }.filter { $0.contains(".docsync-") && $0.hasSuffix(".tmp") } ?? []
        #expect(leftovers.isEmpty, "no temp file of an interrupted id write is left behind: \(leftovers)")
        await final.stop()
        #expect(final.process.terminationStatus == 0)
        await server.stop()
    }

    /// `count` random creates, edits, moves and deletes.
    func applyOperations(round: Int, model: inout Model, docs: TempFolder, count: Int) throws {
        for k in 0..<count {
            switch Int.random(in: 0..<100, using: &model.rng) {
            case 0..<25:
                let path = "items/r\(round)/c\(k).json"
                try docs.write(path, #"{"id":"r\#(round)c\#(k)","docType":"item","born":\#(round)}"#)
                model.files[path] = "r\(round)c\(k)"
            case 25..<35:
                let path = "noid/r\(round)/c\(k).json"
                try docs.write(path, #"{"docType":"item","born":\#(round),"note":"no id yet"}"#)
                model.files[path] = .some(nil)
            case 35..<65:
                guard let (path, id) = model.pick(where: { _, _ in true }) else { continue }
                try docs.write(path, #"{"id":"\#(id)","docType":"item","edited":\#(round),"k":\#(k)}"#)
            case 65..<85:
                guard let (path, id) = model.pick(where: { _, _ in true }) else { continue }
                let target = "moved/r\(round)/\(k)-\(path.split(separator: "/").last!)"
                try docs.move(path, target)
                model.files[path] = nil
                model.files[target] = id
            default:
                guard let (path, id) = model.pick(where: { _, _ in true }) else { continue }
                try docs.remove(path)
                model.files[path] = nil
                model.deleted.insert(id)
                if !model.onServer.contains(id) { model.deletedUnseen.insert(id) }
            }
        }
    }
}
}
