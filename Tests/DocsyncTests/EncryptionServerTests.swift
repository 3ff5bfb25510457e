import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import DocsyncVault
import Foundation
import GRDB
import Testing

/// What an encrypted folder's server holds (issue 59): no marker of the folder's content in its
/// database, its write-ahead log, a PostgreSQL dump, its logs or any HTTP body; and what a server
/// that changes, moves or replays ciphertext gets.
extension HeavySuites {
@Suite(.serialized) struct EncryptionServerTests {
    typealias Rig = EncryptionTests.Rig

    /// The folder's markers: in field names, values, file names and attachments.
    static func writeMarked(_ a: TempFolder) throws {
        try a.write("note/MARKERFILENAME01.json", #"{"id":"d1","MARKERKEY01":"MARKERVALUE01","nested":{"MARKERKEY02":["MARKERVALUE02"]}}"#)
        try a.write("note/d2.json", #"{"id":"d2","text":"MARKERVALUE03"}"#)
        try a.write("task/MARKERATTACH05.txt", "MARKERCONTENT06 " + String(repeating: "z", count: 1000))
        try a.write("task/d3.json", #"{"id":"d3","text":"MARKERVALUE04","scan":{"$file":"MARKERATTACH05.txt"}}"#)
    }

    @Test(arguments: ["sqlite", "postgres"])
    func theServerKeepsNoMarkerOfAFolderTurnedEncryptedThenEditedAndDeleted(store: String) async throws {
        let work = try TempFolder("e2ee-canary")
        try work.write("server-token", "tok-e2ee\n")
        // The server names its files at the proxy's address: every agent goes through it.
        let proxyPort = freePort()
        let publicURL = ["--public-url", "http://127.0.0.1:\(proxyPort)"]
        let (server, url, database): (DocsyncProcess, String, String?)
        if store == "sqlite" {
            (server, url) = try await EncryptionTests.serve(work, extra: publicURL)
            database = nil
        } else {
            let cluster = try await PostgresCluster.shared()
            let name = try cluster.createDatabase()
            let (nodes, urls) = try await cluster.serveNodes(
                1, work: work, tokenFile: work.file("server-token"), name: "serve", database: name, logLevel: "debug", extra: publicURL)
            (server, url, database) = (nodes[0], urls[0], name)
        }
        let proxy = FaultProxy(upstream: url)
        try await proxy.start(port: proxyPort)
        let (a, b) = (try TempFolder("e2ee-canary-a"), try TempFolder("e2ee-canary-b"))
        defer { Task { await proxy.stop(); await server.stop(); for f in [work, a, b] { f.remove() } } }
        // In clear first, straight to the server: then encryption is turned on, through a recording proxy.
        try Self.writeMarked(a)
        let clear = try Rig(work: work, endpoint: url, token: "tok-e2ee")
        try await clear.sync(a, passphrase: false)
        proxy.record(to: work.file("proxy.rec"))
        let rig = try Rig(work: work, endpoint: proxy.url, token: "tok-e2ee")
        _ = try await rig.encrypt(a)
        // Edited, deleted, a document and a file added: all sealed.
        try carefulEdit(a, "note/MARKERFILENAME01.json") { $0["MARKERKEY01"] = "MARKERVALUE07" }
        try a.remove("note/d2.json")
        try a.write("note/MARKERATTACH09.bin", "MARKERCONTENT10 " + String(repeating: "y", count: 100_000))
        try a.write("note/d4.json", #"{"id":"d4","MARKERKEY08":"x","pic":{"$file":"MARKERATTACH09.bin"}}"#)
        try await rig.sync(a)
        try await rig.sync(b)
        #expect(try b.read("note/d1.json").contains("MARKERVALUE07"))
        #expect(!b.exists("note/d2.json"))
        #expect(b.exists("task/d3.scan.txt"), "\(DocsyncWatcherProbe.walk(b.path).map(\.0)) \((try? b.read("task/d3.json")) ?? "")")
        #expect(try b.read("task/d3.scan.txt") == a.read("task/MARKERATTACH05.txt"))
        #expect(try b.read("note/d4.pic.bin") == a.read("note/MARKERATTACH09.bin"))
        proxy.record(to: nil)

        // What the server holds: ids and docTypes, nothing of the content.
        if let database {
            let dump = try await PostgresCluster.shared().dump(database)
            #expect(!dump.contains("MARKER"), "\(dump.ranges(of: "MARKER").first.map { dump[$0.lowerBound...].prefix(200) } ?? "")")
            #expect(["d1", "d3", "d4", "note", "task", "$enc"].allSatisfy(dump.contains))
        } else {
            let files = ["documents.sqlite", "documents.sqlite-wal"].map { work.file("server/" + $0) }
            // The write-ahead log is emptied a second after the last write.
            #expect(await eventually(timeout: .seconds(20)) { files.allSatisfy { !Self.bytes(of: $0).contains("MARKER") } })
            let database = Self.bytes(of: files[0])
            #expect(["d1", "d3", "d4", "note", "task", "$enc"].allSatisfy(database.contains))
            // Files sent after encryption was on are sealed (those sent in clear before stay: docs/ENCRYPTION.md).
            for blob in DocsyncWatcherProbe.walk(work.file("server/uploads")).map(\.0) {
                #expect(!Self.bytes(of: work.file("server/uploads/" + blob)).contains("MARKERCONTENT10"), "\(blob)")
            }
        }
        let logs = (try FileManager.default.contentsOfDirectory(atPath: work.path)).filter { $0.hasPrefix("serve") }
        #expect(!logs.isEmpty)
        for log in logs { #expect(!Self.bytes(of: work.file(log)).contains("MARKER"), "\(log)") }
        let recorded = Self.bytes(of: work.file("proxy.rec"))
        #expect(!recorded.contains("MARKER"), "\(recorded.ranges(of: "MARKER").first.map { recorded[$0.lowerBound...].prefix(300) } ?? "")")
        #expect(["\"d1\"", "\"d4\"", "note", "task", "$enc"].allSatisfy(recorded.contains))
    }

    /// A file's bytes as text (bytes that are not UTF-8 replaced): what `grep -a` would search.
    static func bytes(of path: String) -> String {
        String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data(), as: UTF8.self)
    }

    @Test func aFlippedByteAMovedOrRetypedCiphertextAndAReplayAreRefusedOneByOneAndTheRestSyncs() async throws {
        let work = try TempFolder("e2ee-tamper")
        let (server, url) = try await EncryptionTests.serve(work)
        let (a, b) = (try TempFolder("e2ee-tamper-a"), try TempFolder("e2ee-tamper-b"))
        defer { Task { await server.stop(); for f in [work, a, b] { f.remove() } } }
        let rig = try Rig(work: work, endpoint: url, token: "tok-e2ee")
        for id in ["t1", "t2", "t3", "t4", "ok"] { try a.write("note/\(id).json", #"{"id":"\#(id)","text":"first"}"#) }
        _ = try await rig.encrypt(a)
        let server1 = try await Self.stored(work, "t4")
        try carefulEdit(a, "note/t4.json") { $0["text"] = "second" }
        try await rig.sync(a)
        try await rig.sync(b)
        let before = try ["t1", "t2", "t3", "t4"].map { try b.read("note/\($0).json") }
        #expect(before[3].contains("second"))

        // The server changes what it holds, each as a new revision that b pulls.
        try await Self.tamper(work, "t1") { body in
            var text = Array(body["$enc"]!.string!)
            text[20] = text[20] == "A" ? "B" : "A"
            body["$enc"] = .string(String(text))
        }
        let t3 = try await Self.stored(work, "t3")
        try await Self.tamper(work, "t2") { $0["$enc"] = t3["$enc"] }
        try await Self.tamper(work, "t3") { $0["docType"] = "task" }
        try await Self.tamper(work, "t4") { $0["$enc"] = server1["$enc"] }
        try carefulEdit(a, "note/ok.json") { $0["text"] = "edited" }
        try await rig.sync(a)
        try await rig.sync(b)
        try await rig.sync(b)  // again: nothing new, no loop, the refusals still reported once each
        #expect(try b.read("note/ok.json").contains("edited"), "everything else keeps syncing")
        #expect(try ["t1", "t2", "t3", "t4"].map { try b.read("note/\($0).json") } == before, "the files are untouched")
        #expect(!b.exists("task/t3.json"))
        let status = try await AgentStatus.read(root: b.path)
        #expect(status.refused.map(\.id).sorted() == ["t1", "t2", "t3", "t4"], "\(status.refused)")
        #expect(status.refused.first { $0.id == "t4" }?.reason.contains("replay") == true, "\(status.refused)")
        #expect(status.text(now: 0).contains("documents from the server were refused"))
    }

    /// The server's stored body of `id`.
    static func stored(_ work: TempFolder, _ id: String) async throws -> JSONObject {
        let queue = try DatabaseQueue(path: work.file("server/documents.sqlite"))
        let body = try await queue.read { try String.fetchOne($0, sql: "SELECT body FROM document WHERE id = ?", arguments: [id]) }
        let text = try #require(body)
        return try #require(try JSONParser.parse(text).object)
    }

    /// A hostile server's edit of `id`: its body changed, a new revision and change number.
    static func tamper(_ work: TempFolder, _ id: String, _ change: @escaping @Sendable (inout JSONObject) -> Void) async throws {
        let queue = try DatabaseQueue(path: work.file("server/documents.sqlite"))
        try await queue.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT body, rev FROM document WHERE id = ?", arguments: [id]),
                  case .object(var body) = try JSONParser.parse(row["body"] as String)
            else { throw ProcessFailure("no document \(id)") }
            change(&body)
            let rev = (row["rev"] as Int64) + 1
            body["rev"] = .number(String(rev))
            let seq = (try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM document") ?? 0) + 1
            try db.execute(
                sql: "UPDATE document SET body = ?, rev = ?, seq = ?, doc_type = ? WHERE id = ?",
                arguments: [JSONWriter.string(.object(body)), rev, seq, body["docType"]?.string ?? "", id])
        }
    }

    /// An agent started in clear whose server is encrypted meanwhile: the key document and every
    /// sealed document are refused, never written into the folder as documents; its own edits in
    /// clear are refused by the server.
    @Test func anAgentInClearNeverWritesCiphertextIntoItsFolder() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("e2ee-clear-agent")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("note/mine.json", #"{"id":"mine","text":"in clear"}"#)
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.counts.synced == 1 })
        let made = try VaultKeys.create(passphrase: "correct horse battery", cost: ScryptCost(n: 1 << 10, r: 8, p: 1))
        var vault = made.document.json
        vault["rev"] = nil
        #expect(try await server.api.request("PUT", "/api/document", body: JSONWriter.string(.object(vault))).status == 200)
        let sealed = try DocumentSeal(made.keys).seal(JSONObject([(key: "id", value: "s1"), (key: "docType", value: "note"), (key: "t", value: "x")]),
                                                      id: "s1", docType: "note", number: 1)
        #expect(try await server.api.request("PUT", "/api/document", body: JSONWriter.string(.object(sealed))).status == 200)
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.refusedCount == 2 })
        let status = try await AgentStatus.read(agent.index)
        #expect(status.refused.allSatisfy { $0.reason.contains("--passphrase-file") }, "\(status.refused)")
        #expect(DocsyncWatcherProbe.walk(folder.path).map(\.0) == ["note/mine.json"], "nothing written")
        // Its edit in clear is refused by the server, and kept in the file.
        try folder.write("note/mine.json", #"{"id":"mine","text":"edited in clear"}"#)
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.counts.rejected == 1 })
        #expect(try folder.read("note/mine.json").contains("edited in clear"))
        let stored = try await server.api.request("GET", "/api/document/mine")
        #expect(stored.json?.object?["data"]?.object?["text"] == "in clear")
        try await agent.stop()
        await server.stop()
    }
}
}
