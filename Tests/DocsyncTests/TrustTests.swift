import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import Foundation
import Testing

/// What a server (or anyone holding its token) can make the agent do: nothing outside the folder,
/// no file leaving the machine that the user did not name. Issue 21, findings 1 and 2.
extension HeavySuites {
@Suite(.serialized) struct TrustTests {
    /// `{"leak": {"$file": "../.git/config"}}` stored on the server used to be written into the
    /// user's file as a reference; the next save uploaded `.git/config`.
    @Test func aReferencePlantedByTheServerIsNeverUploaded() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("planted-reference")
        defer { folder.remove() }
        try folder.write(".git/config", "[remote] token=very-secret\n")
        try folder.write("notes/secret.txt", "not for the server\n")
        try folder.write("notes/mine.json", #"{"id":"mine","docType":"note","scan":{"$file":"secret.txt"}}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["mine"] != nil })
        let planted = #"{"id":"trap","docType":"note","leak":{"$file":"../.git/config"},"odd":{"$file":"x","$file-from-server":"y"}}"#
        #expect(try await server.api.request("PUT", "/api/document", body: planted).status == 200)
        // The attacker also overwrites the user's own reference property with one of theirs.
        let overwrite = #"{"id":"mine","docType":"note","scan":{"$file":"../.git/config"}}"#
        #expect(try await server.api.request("PUT", "/api/document", body: overwrite).status == 200)

        #expect(await eventually { folder.exists("note/trap.json") })
        let trap = try DocumentRules.parseObject(Array(folder.bytes("note/trap.json")))
        #expect(trap["leak"] == .object(JSONObject([(key: FileReference.fromServerKey, value: "../.git/config")])), "shown, not a reference")
        #expect(trap["odd"] == .object(JSONObject([(key: FileReference.fromServerKey, value: "y")])))
        #expect(FileReference.all(in: trap, documentPath: "note/trap.json").isEmpty)

        // The user edits both documents: the edits go out, no file does.
        try carefulEdit(folder, "note/trap.json") { $0["title"] = "edited" }
        try carefulEdit(folder, "notes/mine.json") { $0["title"] = "edited too" }
        #expect(await eventually {
            let docs = try? await server.api.documents(type: "note")
            return docs?["trap"]?["title"] == "edited" && docs?["mine"]?["title"] == "edited too"
        })
        try await agent.stop()
        let stats = try await server.api.request("GET", "/api/stats").json?.object?["data"]?.object
        #expect(stats?["uploads"] == .number("1"), "only the user's own reference was uploaded")
        let mineAfter = try DocumentRules.parseObject(Array(folder.bytes("notes/mine.json")))
        #expect(mineAfter["scan"] == .object(JSONObject([(key: "$file", value: "secret.txt")])), "the folder owns its references")
        for blob in FileManager.default.enumerator(atPath: server.data.path + "/uploads")?.compactMap({ $0 as? String }) ?? [] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: server.data.path + "/uploads/" + blob))) ?? Data()
            #expect(!String(decoding: bytes, as: UTF8.self).contains("very-secret"), ".git/config never left the machine")
        }
        await server.stop()
    }

    /// `ln -s ../elsewhere evil` in the folder, and a server document of docType `evil`: it used
    /// to be created, updated and trashed as `../elsewhere/planted.json`.
    @Test func aSymlinkNamedLikeADocTypeIsNotWrittenThrough() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("symlinked-doctype")
        let elsewhere = try TempFolder("elsewhere")
        defer { folder.remove(); elsewhere.remove() }
        #expect(symlink(elsewhere.path, folder.file("evil")) == 0)
        try elsewhere.write("victim.json", #"{"id":"victim","docType":"evil","keep":"me"}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        for body in [#"{"id":"planted","docType":"evil"}"#, #"{"id":"victim","docType":"evil","keep":"overwritten"}"#] {
            #expect(try await server.api.request("PUT", "/api/document", body: body).status == 200)
        }
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"after","docType":"note"}"#).status == 200)
        #expect(await eventually { folder.exists("note/after.json") }, "the agent goes on with the other documents")
        #expect(await eventually { agent.logs.count(containing: "refusing to write through a symlink") > 0 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path) == ["victim.json"])
        #expect(try elsewhere.read("victim.json").contains("\"me\""))
        #expect(try await server.api.request("DELETE", "/api/document", body: #"{"id":"victim","docType":"evil"}"#).status == 200)
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"after2","docType":"note"}"#).status == 200)
        #expect(await eventually { folder.exists("note/after2.json") })
        #expect(elsewhere.exists("victim.json"), "a tombstone does not trash a file outside the folder")
        try await agent.stop()
        await server.stop()
    }

    /// A new document's free name is looked up in its docType's folder by name: a docType with
    /// letters of several UTF-8 bytes (`café`) once had the name cut out of the path by bytes, so
    /// a taken name looked free and the document never arrived.
    @Test func aNewDocumentBesideATakenNameInANonASCIIFolderGetsTheNextName() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("non-ascii-doctype")
        defer { folder.remove() }
        try folder.write("café/x.json", #"{"id":"local","docType":"café"}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { (try? await server.api.documents(type: "café"))?["local"] != nil })
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"x","docType":"café","from":"server"}"#).status == 200)
        #expect(await eventually { folder.exists("café/x-2.json") }, "written beside the taken name")
        #expect(try folder.read("café/x.json").contains("local"))
        try await agent.stop()
        await server.stop()
    }
}
}
