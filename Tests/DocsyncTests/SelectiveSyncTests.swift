import DocsyncAgent
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Selective sync by docType (`--types`, `--exclude-types`): what a folder pulls and pushes, what
/// a grown selection pulls, and what the server's batch call accepts.
extension HeavySuites {
@Suite(.serialized) struct SelectiveSyncTests {
    static let types = ["note", "invoice"] + (1...8).map { "kind\($0)" }

    /// The server holds three documents of each of ten docTypes.
    func seed(_ server: TestServer) async throws {
        let docs = Self.types.flatMap { type in (1...3).map { #"{"id":"\#(type)-\#($0)","docType":"\#(type)","n":\#($0)}"# } }
        let reply = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(docs.joined(separator: ","))]}"#)
        #expect(reply.status == 200)
    }

    func typeFolders(_ folder: TempFolder) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    func mtime(_ folder: TempFolder, _ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: folder.file(path)))?[.modificationDate] as? Date
    }

    @Test func onlyTheSelectedTypesAreSyncedAndAGrownSelectionPullsOnlyWhatItAdds() async throws {
        let server = try await TestServer.start()
        try await seed(server)
        let folder = try TempFolder("selective")
        defer { folder.remove() }

        // --types note: the notes alone arrive; a local file of another type is reported, not sent.
        var agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) { $0.selection = TypeSelection(only: ["note"]) }
        #expect(await eventually { (1...3).allSatisfy { folder.exists("note/note-\($0).json") } })
        try folder.write("tasks/t.json", #"{"id":"t","docType":"task"}"#)
        try folder.write("note/mine.json", #"{"id":"mine","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["mine"] != nil })
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.excluded == 1 })
        #expect(try await server.api.documents(type: "task").isEmpty, "a file of a type not selected stays here")
        #expect(typeFolders(folder) == ["note", "tasks"], "nothing of the other nine types")
        let status = try await AgentStatus.read(root: folder.path)
        #expect(status.text(now: 0).contains("1 files of docTypes this folder does not sync"))
        let noteTime = try #require(mtime(folder, "note/note-1.json"))
        try await agent.stop()

        // invoice added: the invoices (and nothing else) are pulled from the start, the notes are
        // not written again, and the cursor goes on from where it was.
        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) {
            $0.selection = TypeSelection(only: ["note", "invoice"])
        }
        #expect(await eventually { (1...3).allSatisfy { folder.exists("invoice/invoice-\($0).json") } })
        #expect(await eventually { agent.logs.count(containing: "caught up on the newly selected docTypes pull.documents=3") == 1 }, "\(agent.logs.all)")
        #expect(typeFolders(folder) == ["invoice", "note", "tasks"])
        #expect(mtime(folder, "note/note-1.json") == noteTime, "what the folder had is not pulled again")
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"later","docType":"invoice"}"#).status == 200)
        #expect(await eventually { folder.exists("invoice/later.json") }, "and new changes of both types follow")
        try await agent.stop()

        // note dropped: its files stay as they are, its new changes no longer arrive.
        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) { $0.selection = TypeSelection(only: ["invoice"]) }
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"n-late","docType":"note"}"#).status == 200)
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"i-late","docType":"invoice"}"#).status == 200)
        #expect(await eventually { folder.exists("invoice/i-late.json") })
        #expect(!folder.exists("note/n-late.json") && folder.exists("note/note-1.json"))
        #expect(agent.logs.count(containing: "caught up") == 0, "a smaller selection pulls nothing again")
        try await agent.stop()
        await server.stop()
    }

    /// The batch call's selection, as any client may send it: the largest, strangest and wrongest.
    @Test func theBatchCallTakesASelectionAndRefusesABadOne() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await seed(server)
        func ids(_ body: String) async throws -> [String] {
            let reply = try await server.api.request("POST", "/api/sync", body: body)
            #expect(reply.status == 200, "\(reply.text)")
            guard case .array(let list)? = reply.json?.object?["documents"]?.object?["success"] else { return [] }
            return list.compactMap { $0.object?["id"]?.string }
        }
        #expect(try await ids(#"{"since":0,"types":["invoice"]}"#) == ["invoice-1", "invoice-2", "invoice-3"])
        #expect(try await ids(#"{"since":0,"types":["invoice","note"],"exclude_types":["note"]}"#).count == 3)
        #expect(try await ids(#"{"since":0,"exclude_types":["note","invoice"]}"#).count == 24)
        #expect(try await ids(#"{"since":0,"types":[]}"#).isEmpty, "an empty selection selects nothing")
        let many = (0...TypeSelection.maxTypes).map { "\"t\($0)\"" }.joined(separator: ",")
        for bad in [#"{"types":"note"}"#, #"{"types":[1]}"#, #"{"types":["a/b"]}"#, #"{"exclude_types":[""]}"#, #"{"types":[\#(many)]}"#] {
            let reply = try await server.api.request("POST", "/api/sync", body: bad)
            #expect(reply.status == 400 && reply.text.contains("types"), "\(bad.prefix(40)): \(reply.status) \(reply.text)")
        }
    }
}
}

/// The selection's own arithmetic: what a grown selection adds.
@Suite struct TypeSelectionTests {
    @Test func whatAGrownSelectionAdds() {
        let notes = TypeSelection(only: ["note"])
        #expect(TypeSelection(only: ["note", "invoice"]).added(since: notes) == TypeSelection(only: ["invoice"]))
        #expect(notes.added(since: TypeSelection(only: ["note", "invoice"])) == nil)
        #expect(TypeSelection.all.added(since: notes) == TypeSelection(except: ["note"]))
        #expect(TypeSelection(except: ["a"]).added(since: TypeSelection(except: ["a", "b"])) == TypeSelection(only: ["b"]))
        #expect(TypeSelection.all.added(since: .all) == nil)
        #expect(TypeSelection(only: ["a", "b"], except: ["b"]).added(since: .all) == nil)
        for selection in [TypeSelection.all, notes, TypeSelection(only: ["a,b", "c"], except: ["d;e"])] {
            #expect(TypeSelection(text: selection.text) == selection, "\(selection.text)")
        }
    }
}
