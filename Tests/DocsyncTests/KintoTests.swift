@testable import DocsyncAgent
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncKinto
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// docsync against a real, independent document server: Kinto from PyPI (memory backend).
extension LongSuites {
@Suite(.serialized) struct KintoTests {
    let credential = "alice:secret"

    /// What a user would do with curl: the Kinto API with alice's password.
    func kintoAPI(_ server: KintoServer) -> (APIClient, [(String, String)]) {
        (APIClient(baseURL: server.url, token: ""), [("Authorization", "Basic " + Data(credential.utf8).base64EncodedString())])
    }

    /// The live records of a collection, by id (the server's own fields aside).
    func records(_ server: KintoServer, _ collection: String) async throws -> [String: JSONObject] {
        let (api, auth) = kintoAPI(server)
        let reply = try await api.request("GET", "/buckets/folder/collections/\(collection)/records?_limit=10000", token: .some(nil), headers: auth)
        guard case .array(let list)? = reply.json?.object?["data"] else { return [:] }
        var out: [String: JSONObject] = [:]
        for case .object(var record) in list {
            guard let id = record["id"]?.string else { continue }
            record["last_modified"] = nil
            record["updated_at"] = nil
            out[id] = record
        }
        return out
    }

    func agent(
        _ folder: TempFolder, _ server: KintoServer, credential: String? = nil, poll: Duration = .milliseconds(100), clock: ServerClock? = nil,
        selection: TypeSelection = .all
    ) async throws -> TestAgent {
        let url = server.url
        let adapter = AdapterMaker { context in
            KintoEndpoint(
                transport: HTTPTransport(baseURL: url, client: agentClient, clock: context.clock, clientID: context.clientID, requestTimeout: context.requestTimeout),
                bucket: "folder", credential: context.credential, selection: context.selection)
        }
        return try await TestAgent.start(
            folder: folder, endpoint: server.endpoint(bucket: "folder"), token: credential ?? self.credential, clock: clock, adapter: adapter
        ) {
            $0.pollInterval = poll
            $0.selection = selection
        }
    }

    func file(of id: String, in folder: TempFolder) -> String? {
        DocsyncWatcherProbe.walk(folder.path).map(\.0).first { (try? idOf(folder, $0)) == id }
    }

    func object(of id: String, in folder: TempFolder) -> JSONObject? {
        file(of: id, in: folder).flatMap { try? DocumentRules.parseObject(Array(folder.bytes($0))).object }
    }

    @Test func aFolderAndKintoMirrorEachOtherAndTwoAgentsConverge() async throws {
        let server = try await KintoServer.start()
        let (folderA, folderB) = (try TempFolder("kinto-a"), try TempFolder("kinto-b"))
        let a = try await agent(folderA, server)
        let b = try await agent(folderB, server)
        defer { Task { try? await a.stop(); try? await b.stop(); await server.stop(); folderA.remove(); folderB.remove() } }

        // Create, edit, move, delete in A: Kinto holds exactly the folder.
        try folderA.write("notes/one.json", #"{"id":"one","docType":"note","title":"first","price":1.50}"#)
        try folderA.write("tasks/two.json", #"{"id":"two","docType":"task","done":false}"#)
        #expect(await eventually { (try? await records(server, "note"))?["one"]?["title"] == "first" })
        #expect(await eventually { (try? await records(server, "task"))?["two"] != nil })
        try folderA.write("notes/one.json", #"{"id":"one","docType":"note","title":"edited","price":1.50}"#)
        #expect(await eventually { (try? await records(server, "note"))?["one"]?["title"] == "edited" })
        try FileManager.default.createDirectory(atPath: folderA.file("notes/archive"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: folderA.file("notes/one.json"), toPath: folderA.file("notes/archive/one.json"))
        try folderA.remove("tasks/two.json")
        #expect(await eventually { (try? await records(server, "task"))?["two"] == nil })
        #expect(try await records(server, "note")["one"]?["title"] == "edited", "a move is not a delete")

        // B has what A has.
        #expect(await eventually { object(of: "one", in: folderB)?["title"] == "edited" })
        #expect(await eventually { file(of: "two", in: folderB) == nil })

        // A change made on Kinto directly reaches both folders.
        let (api, auth) = kintoAPI(server)
        let current = try #require(try await api.request("GET", "/buckets/folder/collections/note/records/one", token: .some(nil), headers: auth).json?.object?["data"]?.object)
        guard case .number(let stamp)? = current["last_modified"] else { Issue.record("no last_modified: \(current)"); return }
        let put = try await api.request(
            "PUT", "/buckets/folder/collections/note/records/one", body: #"{"data":{"title":"from curl","price":1.50}}"#, token: .some(nil),
            headers: auth + [("If-Match", "\"\(stamp)\"")])
        #expect(put.status == 200, "\(put.text)")
        #expect(await eventually { object(of: "one", in: folderA)?["title"] == "from curl" })
        #expect(await eventually { object(of: "one", in: folderB)?["title"] == "from curl" })
        #expect(file(of: "one", in: folderA) == "notes/archive/one.json", "the server's change lands where the file is")
    }

    /// `--types note` against Kinto: only the note collection is read; a task file stays local.
    @Test func aSelectionOfDocTypesReadsOnlyThoseCollections() async throws {
        let server = try await KintoServer.start()
        let (folderA, folderB) = (try TempFolder("kinto-all"), try TempFolder("kinto-notes"))
        let a = try await agent(folderA, server)
        let b = try await agent(folderB, server, selection: TypeSelection(only: ["note"]))
        defer { Task { try? await a.stop(); try? await b.stop(); await server.stop(); folderA.remove(); folderB.remove() } }
        try folderA.write("tasks/t.json", #"{"id":"t","docType":"task"}"#)
        try folderA.write("notes/n.json", #"{"id":"n","docType":"note"}"#)
        try folderB.write("drafts/d.json", #"{"id":"d","docType":"draft"}"#)
        #expect(await eventually { (try? await records(server, "task"))?["t"] != nil })
        #expect(await eventually { object(of: "n", in: folderB) != nil })
        try folderA.write("notes/n2.json", #"{"id":"n2","docType":"note"}"#)
        #expect(await eventually { object(of: "n2", in: folderB) != nil }, "pulls after the task was stored")
        #expect(file(of: "t", in: folderB) == nil, "the task collection is not pulled")
        #expect((try? await records(server, "draft"))?["d"] == nil, "a draft is not pushed")
    }

    /// 120 records of 20,000 values each: a page of 1,000 records (all of them) holds 2.4 M values,
    /// more than the agent takes from one reply. The page is asked again for half as many records
    /// until it fits, and every record arrives.
    @Test func aPageTooLargeForTheAgentIsAskedAgainSmaller() async throws {
        let server = try await KintoServer.start()
        let (folderA, folderB) = (try TempFolder("kinto-dense-a"), try TempFolder("kinto-dense-b"))
        let a = try await agent(folderA, server)
        defer { folderA.remove(); folderB.remove() }
        let numbers = Array(repeating: "7", count: 20_000).joined(separator: ",")
        for i in 0..<120 { try folderA.write("points/p\(i).json", #"{"id":"p\#(i)","docType":"points","v":[\#(numbers)]}"#) }
        #expect(await eventually(timeout: .seconds(60)) { (try? await records(server, "points"))?.count == 120 })
        try await a.stop()
        let b = try await agent(folderB, server)
        #expect(await eventually(timeout: .seconds(60)) { (0..<120).allSatisfy { folderB.exists("points/p\($0).json") } }, "\(b.logs.all.suffix(3))")
        #expect(object(of: "p119", in: folderB)?["v"]?.elements?.count == 20_000)
        #expect(try await AgentStatus.read(root: folderB.path).pullError == nil)
        try await b.stop()
        await server.stop()
    }

    @Test func aConcurrentChangeGets412AndIsMerged() async throws {
        let server = try await KintoServer.start()
        let folder = try TempFolder("kinto-412")
        // A long poll interval: the agent does not see the server's change before it pushes its own.
        let a = try await agent(folder, server, poll: .seconds(3600))
        defer { Task { try? await a.stop(); await server.stop(); folder.remove() } }
        try folder.write("notes/m.json", #"{"id":"m","docType":"note","x":"a","y":"a"}"#)
        #expect(await eventually { (try? await records(server, "note"))?["m"] != nil })
        let (api, auth) = kintoAPI(server)
        let current = try #require(try await api.request("GET", "/buckets/folder/collections/note/records/m", token: .some(nil), headers: auth).json?.object?["data"]?.object)
        var data = current
        data["x"] = "server"
        data["last_modified"] = nil
        data["id"] = nil
        _ = try await api.request(
            "PUT", "/buckets/folder/collections/note/records/m", body: JSONWriter.string(.object(JSONObject([(key: "data", value: .object(data))]))),
            token: .some(nil), headers: auth)
        try folder.write("notes/m.json", #"{"id":"m","docType":"note","x":"a","y":"local"}"#)
        #expect(await eventually { let r = try? await records(server, "note"); return r?["m"]?["x"] == "server" && r?["m"]?["y"] == "local" })
        #expect(await eventually { let o = object(of: "m", in: folder); return o?["x"] == "server" && o?["y"] == "local" })
    }

    @Test func aThousandDocumentsImportThroughTheBatchCall() async throws {
        let server = try await KintoServer.start()
        let folder = try TempFolder("kinto-import")
        for i in 0..<1000 { try folder.write("items/g\(i / 100)/i\(i).json", #"{"id":"i\#(i)","docType":"item","n":\#(i)}"#) }
        let a = try await agent(folder, server)
        defer { Task { try? await a.stop(); await server.stop(); folder.remove() } }
        #expect(await eventually(timeout: .seconds(60)) { (try? await records(server, "item"))?.count == 1000 })
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0 })
        #expect(try await records(server, "item")["i999"]?["n"] == 999)
    }

    @Test func kintoRestartedMidImportWithItsDataLostGetsEverythingAgain() async throws {
        var server = try await KintoServer.start()
        let folder = try TempFolder("kinto-restart")
        for i in 0..<1200 { try folder.write("items/g\(i / 100)/i\(i).json", #"{"id":"i\#(i)","docType":"item","n":\#(i)}"#) }
        let a = try await agent(folder, server)
        #expect(await eventually { ((try? await records(server, "item"))?.count ?? 0) >= 200 })
        let before = (try? await records(server, "item"))?.count ?? 0
        // The memory backend: the restarted server has no bucket, no collection, no record.
        server = try await server.restarted()
        let restarted = server
        defer { Task { try? await a.stop(); await restarted.stop(); folder.remove() } }
        let complete = await eventually(timeout: .seconds(60)) { (try? await records(restarted, "item"))?.count == 1200 }
        let held = (try? await records(restarted, "item"))?.count ?? -1
        #expect(complete, "\(held) records; \(a.logs.all.suffix(12).joined(separator: "\n"))")
        #expect(try await records(restarted, "item")["i0"]?["n"] == 0, "the first ones, delivered before the restart (\(before)), too")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.paused == nil })
    }

    @Test func aWrongPasswordIsOneClearErrorAndNoRetryStorm() async throws {
        let server = try await KintoServer.start()
        // The bucket is alice's; a wrong password is another Kinto user, refused there.
        let owner = KintoEndpoint(transport: HTTPTransport(baseURL: server.url, client: agentClient, clock: nil), bucket: "folder", credential: credential)
        try await owner.prepare(["note"])
        let folder = try TempFolder("kinto-wrong")
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        let a = try await agent(folder, server, credential: "alice:wrong")
        defer { Task { try? await a.stop(); await server.stop(); folder.remove() } }
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.paused?.contains("token rejected") == true })
        try await Task.sleep(for: .seconds(2))  // the window a storm would show in
        #expect(a.logs.count(containing: "token rejected by") == 1, "\(a.logs.all.filter { $0.contains("token rejected") })")
        #expect(a.logs.count(containing: "pulling failed") <= 1, "said once while it lasts")
        #expect(try await records(server, "note").isEmpty)
    }

    /// Rights (issue 57) on a real Kinto: a principal that may read the bucket but not write it
    /// pulls, and its edit is held as not allowed, kept in its file, not retried in a loop.
    @Test func aReadOnlyPrincipalPullsAndItsEditIsHeldAsNotAllowed() async throws {
        let server = try await KintoServer.start()
        let folder = try TempFolder("kinto-reader")
        let owner = try await agent(try TempFolder("kinto-owner"), server)
        try owner.folder.write("notes/one.json", #"{"id":"one","docType":"note","title":"first"}"#)
        #expect(await eventually { (try? await records(server, "note"))?["one"] != nil })
        // bob's principal, then read permission on the bucket for it.
        let (api, auth) = kintoAPI(server)
        let bobAuth = [("Authorization", "Basic " + Data("bob:pw".utf8).base64EncodedString())]
        let bob = try #require(try await api.request("GET", "/", token: .some(nil), headers: bobAuth).json?.object?["user"]?.object?["id"]?.string)
        let granted = try await api.request(
            "PATCH", "/buckets/folder", body: #"{"permissions":{"read":["\#(bob)"]}}"#, token: .some(nil), headers: auth)
        #expect(granted.status == 200, "\(granted.text)")
        let reader = try await agent(folder, server, credential: "bob:pw")
        defer { Task { try? await reader.stop(); try? await owner.stop(); await server.stop(); folder.remove(); owner.folder.remove() } }
        #expect(await eventually { object(of: "one", in: folder)?["title"] == "first" }, "\(reader.logs.all.suffix(5))")
        let path = try #require(file(of: "one", in: folder))
        try folder.write(path, #"{"id":"one","docType":"note","title":"mine"}"#)
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.notAllowedCount == 1 }, "\(reader.logs.all.suffix(5))")
        #expect(try await AgentStatus.read(root: folder.path).paused == nil, "a right lacking is not a credential refused")
        #expect(object(of: "one", in: folder)?["title"] == "mine")
        #expect(try await records(server, "note")["one"]?["title"] == "first")
    }

    @Test func anAttachmentRoundTripsByteIdenticalAndOneRecordHoldsOne() async throws {
        let server = try await KintoServer.start(attachments: true)
        let folder = try TempFolder("kinto-attach")
        let a = try await agent(folder, server)
        defer { Task { try? await a.stop(); await server.stop(); folder.remove() } }
        let sha = try folder.writeRandom("reports/scan.pdf", size: 1_500_000, seed: 1)
        try folder.write("reports/r.json", #"{"id":"r","docType":"report","title":"q3","scan":{"$file":"scan.pdf"}}"#)

        // The record names the file by its URL; the bytes served there are the file's.
        #expect(await eventually(timeout: .seconds(30)) { (try? await records(server, "report"))?["r"]?["scan"]?.string != nil })
        let record = try #require(try await records(server, "report")["r"])
        let url = try #require(record["scan"]?.string)
        let served = try await APIClient(baseURL: "", token: "").download(url, token: .some(nil))
        #expect(served.status == 200 && served.sha256 == sha && served.length == 1_500_000)
        #expect(record["attachment"]?.object?["hash"]?.string == sha, "the plugin's own metadata: \(record)")

        // The plugin's metadata comes back into the file; the reference stays as the user wrote it.
        #expect(await eventually { object(of: "r", in: folder)?["attachment"]?.object?["location"]?.string == url })
        #expect(object(of: "r", in: folder)?["scan"] == .object(JSONObject([(key: "$file", value: .string("scan.pdf"))])))

        // An edit keeps the attachment (sent back unchanged, as the plugin requires).
        try carefulEdit(folder, "reports/r.json") { $0["title"] = "q4" }
        #expect(await eventually { (try? await records(server, "report"))?["r"]?["title"] == "q4" })
        #expect(try await records(server, "report")["r"]?["attachment"]?.object?["hash"]?.string == sha)

        // New bytes: a new upload, a new URL serving them.
        let sha2 = try folder.writeRandom("reports/scan.pdf", size: 200_000, seed: 2)
        // The plugin's metadata changes with the upload, the property with the record's update
        // that follows it: both are waited for.
        #expect(await eventually(timeout: .seconds(30)) {
            let r = (try? await records(server, "report"))?["r"]
            return r?["attachment"]?.object?["hash"]?.string == sha2 && r?["scan"]?.string != url
        })
        let url2 = try #require(try await records(server, "report")["r"]?["scan"]?.string)
        #expect(try await APIClient(baseURL: "", token: "").download(url2, token: .some(nil)).sha256 == sha2)

        // A second file in one record: reported for its property, not sent; the first stays.
        try folder.writeRandom("reports/thumb.png", size: 1000, seed: 3)
        try carefulEdit(folder, "reports/r.json") {
            $0["thumb"] = .object(JSONObject([(key: "$file", value: .string("thumb.png"))]))
            $0["title"] = "q5"
        }
        #expect(await eventually {
            (try? await AgentStatus.read(root: folder.path))?.uploads.contains { $0.property == "thumb" && ($0.error ?? "").contains("one file per document") } == true
        })
        // Logged just after the index records it: waited for too.
        #expect(await eventually { a.logs.all.contains { $0.contains("thumb") && $0.contains("one file per document") } }, "said in the log too")
        // The edit that added it arrives; the property holds no file there (null, or absent when a
        // server change was merged in first: the folder owns it either way).
        #expect(await eventually { (try? await records(server, "report"))?["r"]?["title"] == "q5" })
        let final = try #require(try await records(server, "report")["r"])
        #expect(final["thumb"] == nil || final["thumb"] == .null, "\(final)")
        #expect(try await records(server, "report")["r"]?["attachment"]?.object?["hash"]?.string == sha2)
    }

    @Test func anAttachmentReachesASecondFolderAndItsNewVersionFollows() async throws {
        let server = try await KintoServer.start(attachments: true)
        let (folderA, folderB) = (try TempFolder("kinto-att-a"), try TempFolder("kinto-att-b"))
        let a = try await agent(folderA, server)
        let b = try await agent(folderB, server)
        defer { Task { try? await a.stop(); try? await b.stop(); await server.stop(); folderA.remove(); folderB.remove() } }
        let sha = try folderA.writeRandom("reports/scan.pdf", size: 1_500_000, seed: 4)
        try folderA.write("reports/r.json", #"{"id":"r","docType":"report","scan":{"$file":"scan.pdf"}}"#)

        // Fetched from the plugin's storage, checked against the plugin's hash, placed beside the document.
        #expect(await eventually(timeout: .seconds(30)) { object(of: "r", in: folderB)?["scan"] == fileRef("r.scan.pdf") })
        #expect(ContentHash.sha256Hex(try folderB.bytes("report/r.scan.pdf")) == sha)

        // B's new version reaches A's file, where A's reference points.
        let sha2 = try folderB.writeRandom("report/r.scan.pdf", size: 300_000, seed: 5)
        #expect(await eventually(timeout: .seconds(30)) { (try? ContentHash.sha256Hex(folderA.bytes("reports/scan.pdf"))) == sha2 },
                "A: \(a.logs.all.suffix(12))\nB: \(b.logs.all.suffix(12))")
        #expect(object(of: "r", in: folderA)?["scan"] == fileRef("scan.pdf"))
    }

    @Test func writesCalibrateTheClockToTheMillisecondWithAnHonestBound() async throws {
        let server = try await KintoServer.start()
        let folder = try TempFolder("kinto-clock")
        let clock = ServerClock()
        let a = try await agent(folder, server, clock: clock)
        defer { Task { try? await a.stop(); await server.stop(); folder.remove() } }
        // Three writes, one after another: the first exchange with a cold Kinto can take over a
        // second on a loaded machine; the filter keeps the quickest.
        for name in ["c1", "c2", "c3"] {
            try folder.write("notes/\(name).json", #"{"id":"\#(name)","docType":"note"}"#)
            #expect(await eventually { (try? await records(server, "note"))?[name] != nil })
        }
        let estimate = try #require(clock.estimate)
        #expect(estimate.source == .writeStamp, "a write's last_modified beats the Date header's second")
        #expect(estimate.bound <= estimate.minDelay / 2 + 500_000 + 1_000_000, "half the quickest round trip and half a millisecond: \(estimate)")
        #expect(estimate.bound < 250_000_000, "a loopback round trip, not seconds: \(estimate)")
        // Kinto runs on this machine: its clock is this wall clock, within the bound.
        let error = abs(clock.nowNanoseconds() - Int64(Date().timeIntervalSince1970 * 1e9))
        #expect(error <= clock.estimate!.bound + 5_000_000, "off by \(error) ns, bound \(estimate.bound) ns")
    }
}
}
