import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Testing

/// Two folders, one server, real processes: what one folder does, the other shows.
extension HeavySuites {
@Suite(.serialized) struct TwoWayTests {
    final class Rig: @unchecked Sendable {
        let work: TempFolder
        let a: TempFolder
        let b: TempFolder
        let server: DocsyncProcess
        let url: String
        let api: APIClient
        var agentA: DocsyncProcess?
        var agentB: DocsyncProcess?
        var starts = 0

        init() async throws {
            work = try TempFolder("twoway")
            a = try TempFolder("folder-a")
            b = try TempFolder("folder-b")
            try work.write("token", "two-way-token\n")
            server = try DocsyncProcess(["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")], logDirectory: work.path, name: "serve")
            url = try await server.firstLine()
            api = APIClient(baseURL: url, token: "two-way-token")
            agentA = try start(a)
            agentB = try start(b)
        }

        func start(_ folder: TempFolder) throws -> DocsyncProcess {
            starts += 1
            return try DocsyncProcess(["watch", folder.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-\(starts)")
        }

        func finish() async {
            await agentA?.stop()
            await agentB?.stop()
            await server.stop()
            work.remove(); a.remove(); b.remove()
        }

        /// The file in `folder` holding document `id`, if any.
        func file(of id: String, in folder: TempFolder) -> String? {
            DocsyncWatcherProbe.walk(folder.path).map(\.0).first { (try? idOf(folder, $0)) == id }
        }

        func object(of id: String, in folder: TempFolder) -> JSONObject? {
            file(of: id, in: folder).flatMap { try? DocumentRules.parseObject(Array(folder.bytes($0))) }
        }

        /// Writes `notes/doc.json` (document `doc`) in A and returns the path of its file in B,
        /// once B has it.
        func docInBoth(_ json: String) async throws -> String {
            try a.write("notes/doc.json", json)
            #expect(await eventually { self.object(of: "doc", in: self.b) != nil })
            return try #require(file(of: "doc", in: b))
        }

    }

    @Test func createEditMoveAndDeleteInOneFolderShowInTheOther() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.a.write("notes/shopping.json", #"{"id":"shop","docType":"note","items":["milk"]}"#)
        #expect(await eventually { rig.object(of: "shop", in: rig.b)?["items"] == ["milk"] })
        #expect(rig.file(of: "shop", in: rig.b) == "note/shop.json", "new documents land at <docType>/<id>.json")
        try rig.a.write("notes/shopping.json", #"{"id":"shop","docType":"note","items":["milk","eggs"]}"#)
        #expect(await eventually { rig.object(of: "shop", in: rig.b)?["items"] == ["milk", "eggs"] })
        try rig.a.move("notes/shopping.json", "archive/shopping.json")
        try rig.a.write("notes/after-move.json", #"{"id":"marker","docType":"note"}"#)
        #expect(await eventually { rig.object(of: "marker", in: rig.b) != nil })
        #expect(rig.object(of: "shop", in: rig.b)?["items"] == ["milk", "eggs"], "a move changes no content")
        #expect(try await rig.api.documents(type: "note").count == 2)
        try rig.a.remove("archive/shopping.json")
        #expect(await eventually { rig.file(of: "shop", in: rig.b) == nil })
        let trash = try FileManager.default.contentsOfDirectory(atPath: rig.b.file(".docsync/trash"))
        #expect(trash.contains { $0.hasPrefix("shop-") }, "recoverable from .docsync/trash")
        // B's own writes are not pushed back: the server saw one write per change.
        #expect(try await rig.api.documents(type: "note")["shop"]?["rev"] == .number("3"))
    }

    @Test func concurrentEditsToDifferentFieldsMergeOnBothSides() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.a.write("notes/doc.json", "{\n  \"id\": \"doc\",\n  \"docType\": \"note\",\n  \"title\": \"t0\",\n  \"body\": \"b0\"\n}\n")
        #expect(await eventually { rig.object(of: "doc", in: rig.b) != nil })
        await rig.agentB?.stop()
        try rig.a.write("notes/doc.json", "{\n  \"id\": \"doc\",\n  \"docType\": \"note\",\n  \"title\": \"t1 from A\",\n  \"body\": \"b0\"\n}\n")
        #expect(await eventually { (try? await rig.api.documents(type: "note")["doc"]?["title"]) == "t1 from A" })
        let path = try #require(rig.file(of: "doc", in: rig.b))
        var edited = try #require(rig.object(of: "doc", in: rig.b))
        edited["body"] = "b1 from B"
        try rig.b.write(path, JSONWriter.string(.object(edited), style: .pretty) + "\n")
        rig.agentB = try rig.start(rig.b)
        for folder in [rig.a, rig.b] {
            #expect(await eventually {
                let o = rig.object(of: "doc", in: folder)
                return o?["title"] == "t1 from A" && o?["body"] == "b1 from B"
            })
            #expect(conflictCopies(in: folder).isEmpty)
        }
    }

    @Test func editsToTheSameFieldLeaveOneConflictCopyAndConverge() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"t0"}"#)
        #expect(await eventually { rig.object(of: "doc", in: rig.b) != nil })
        await rig.agentB?.stop()
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"from A"}"#)
        #expect(await eventually { (try? await rig.api.documents(type: "note")["doc"]?["title"]) == "from A" })
        let path = try #require(rig.file(of: "doc", in: rig.b))
        try rig.b.write(path, #"{"id":"doc","docType":"note","title":"from B"}"#)
        rig.agentB = try rig.start(rig.b)  // B's edit is seen now: the later change
        for folder in [rig.a, rig.b] {
            #expect(await eventually { rig.object(of: "doc", in: folder)?["title"] == "from B" })
        }
        let copies = conflictCopies(in: rig.a) + conflictCopies(in: rig.b)
        #expect(copies.count == 1, "\(copies)")
        let copy = try #require(conflictCopies(in: rig.b).first)
        #expect(try DocumentRules.parseObject(Array(rig.b.bytes(copy)))["title"] == "from A", "the losing version, in full")
        let (code, out, _) = try await runDocsync(["conflicts", rig.b.path], logDirectory: rig.work.path)
        #expect(code == 0 && out.contains(copy))
        #expect(try await rig.api.documents(type: "note").count == 1, "conflict copies are never synced")
        let (code2, _, err2) = try await runDocsync(["resolve", rig.b.file(copy), "--keep", "theirs"], logDirectory: rig.work.path)
        #expect(code2 == 0, "\(err2)")
        for folder in [rig.a, rig.b] {
            #expect(await eventually { rig.object(of: "doc", in: folder)?["title"] == "from A" })
        }
        #expect(conflictCopies(in: rig.b).isEmpty)
    }

    @Test func theNewestFiveConflictCopiesStayEvenWhenMadeInTheSameSecond() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let path = try await rig.docInBoth(#"{"id":"doc","docType":"note","title":"t0"}"#)
        for round in 0..<7 {
            await rig.agentB?.stop()
            try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"A\#(round)"}"#)
            #expect(await eventually { (try? await rig.api.documents(type: "note")["doc"]?["title"]) == .string("A\(round)") })
            try rig.b.write(path, #"{"id":"doc","docType":"note","title":"B\#(round)"}"#)
            rig.agentB = try rig.start(rig.b)  // B's edit is the later one: A's version is the copy
            #expect(await eventually { rig.object(of: "doc", in: rig.a)?["title"] == .string("B\(round)") })
        }
        let kept = conflictCopies(in: rig.b).compactMap { try? DocumentRules.parseObject(Array(rig.b.bytes($0)))["title"]?.string }
        #expect(Set(kept) == ["A2", "A3", "A4", "A5", "A6"], "the newest five: \(conflictCopies(in: rig.b))")
    }

    @Test func aFileIgnoredSinceItSyncedIsLeftAloneByPulledChanges() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let path = try await rig.docInBoth(#"{"id":"doc","docType":"note","title":"t0"}"#)
        await rig.agentB?.stop()
        try rig.b.write(".docsyncignore", path + "\n")
        let before = try rig.b.read(path)
        rig.agentB = try rig.start(rig.b)
        #expect(await eventually { rig.agentB!.stderr.contains("watching") })
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"t1 from A"}"#)
        try rig.a.write("notes/marker.json", #"{"id":"marker","docType":"note"}"#)
        #expect(await eventually { rig.object(of: "marker", in: rig.b) != nil })
        // The change for the ignored file does not wait for that file either, holding back the
        // ones after it (it would for 7.5 s).
        try rig.a.write("notes/marker2.json", #"{"id":"marker2","docType":"note"}"#)
        #expect(await eventually(timeout: .seconds(5)) { rig.object(of: "marker2", in: rig.b) != nil })
        #expect(try rig.b.read(path) == before, "the ignored file is not written")
        #expect(conflictCopies(in: rig.b).isEmpty)
    }

    @Test func anEditBeatsADelete() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","v":0}"#)
        #expect(await eventually { rig.object(of: "doc", in: rig.b) != nil })
        await rig.agentB?.stop()
        try rig.a.remove("notes/doc.json")
        #expect(await eventually { (try? await rig.api.documents(type: "note")["doc"]?["deleted_at"]) != nil })
        let path = try #require(rig.file(of: "doc", in: rig.b))
        try rig.b.write(path, #"{"id":"doc","docType":"note","v":"edited in B"}"#)
        rig.agentB = try rig.start(rig.b)
        #expect(await eventually { (try? await rig.api.documents(type: "note")["doc"]).map { $0["deleted_at"] == nil && $0["v"] == "edited in B" } == true })
        #expect(await eventually { rig.object(of: "doc", in: rig.a)?["v"] == "edited in B" }, "the document comes back in A")
    }

    @Test func pulledFilesKeepTheirLayoutAndAreNotRewrittenWithoutAChange() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let path = try await rig.docInBoth(#"{"id":"doc","docType":"note","a":1,"b":"x"}"#)
        // B's own layout: its key order, compact.
        try rig.b.write(path, #"{"b":"x","id":"doc","a":1,"docType":"note"}"#)
        try rig.b.write("notes/marker-b.json", #"{"id":"marker-b","docType":"note"}"#)
        #expect(await eventually { (try? await rig.api.documents(type: "note")["marker-b"]) != nil })
        // Another order of the same members is the same document: not sent, no new revision
        // (sent, every agent that writes it in its own order sent it back, round after round).
        #expect(try await rig.api.documents(type: "note")["doc"]?["rev"] == .number("1"))
        let before = try #require(FileSystem.info(rig.b.file(path)))
        // A reorders keys only: the same content, so B's file is left exactly as it is.
        try rig.a.write("notes/doc.json", #"{"docType":"note","a":1,"b":"x","id":"doc"}"#)
        try rig.a.write("notes/marker.json", #"{"id":"marker1","docType":"note"}"#)
        #expect(await eventually { rig.object(of: "marker1", in: rig.b) != nil })
        #expect(FileSystem.info(rig.b.file(path)) == before, "no rewrite, mtime untouched")
        // A changes values and adds keys: B's order kept, new keys appended, pretty, literal numbers.
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","a":1.50,"b":"café ✓","new":12345678901234567890}"#)
        #expect(await eventually { rig.object(of: "doc", in: rig.b)?["new"] != nil })
        let text = try rig.b.read(path)
        #expect(text == "{\n  \"b\": \"café ✓\",\n  \"id\": \"doc\",\n  \"a\": 1.50,\n  \"docType\": \"note\",\n  \"new\": 12345678901234567890\n}\n", "\(text)")
    }

    @Test func savesMadeWhileTheOtherSidesChangesAreWrittenAreNeverLost() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let pathB = try await rig.docInBoth(#"{"id":"doc","docType":"note"}"#)
        // Both sides keep saving while each agent writes the other side's changes into its file.
        let rounds = 40
        func saves(_ folder: TempFolder, _ path: String, _ prefix: String) async throws {
            for i in 0..<rounds {
                try carefulEdit(folder, path) { $0["\(prefix)\(i)"] = .number("\(i)") }
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...25)))
            }
        }
        async let savesA: Void = saves(rig.a, "notes/doc.json", "a")
        async let savesB: Void = saves(rig.b, pathB, "b")
        _ = try await (savesA, savesB)
        let expected = Set((0..<rounds).flatMap { ["a\($0)", "b\($0)"] })
        for (name, folder) in [("A", rig.a), ("B", rig.b)] {
            let complete = await eventually(timeout: .seconds(30)) { Set(rig.object(of: "doc", in: folder)?.members.map(\.key) ?? []).isSuperset(of: expected) }
            let onServer = try await rig.api.documents(type: "note")["doc"]?.members.map(\.key) ?? []
            #expect(complete, """
                missing in \(name): \(expected.subtracting(rig.object(of: "doc", in: folder)?.members.map(\.key) ?? []).sorted()), \
                on the server: \(expected.subtracting(onServer).sorted())
                A: \(rig.agentA?.stderr.suffix(3000) ?? "")
                B: \(rig.agentB?.stderr.suffix(3000) ?? "")
                """)
        }
        let onServer = try await rig.api.documents(type: "note")["doc"]?.members.map(\.key) ?? []
        #expect(Set(onServer).isSuperset(of: expected))
        #expect(conflictCopies(in: rig.a).isEmpty && conflictCopies(in: rig.b).isEmpty, "edits to different fields never conflict")
    }

    @Test func aChangeToAFileThatIsBrokenRightNowIsKeptBesideIt() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let path = try await rig.docInBoth(#"{"id":"doc","docType":"note","title":"t0"}"#)
        let broken = #"{"id":"doc","docType":"note","title":"half typed"#
        try rig.b.write(path, broken)
        #expect(await eventually { rig.agentB!.stderr.contains("invalid document") })
        try rig.a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"t1 from A"}"#)
        #expect(await eventually { conflictCopies(in: rig.b).count == 1 }, "the server's version, beside the file")
        #expect(try rig.b.read(path) == broken, "the user's file is left as it is")
        let copy = try #require(conflictCopies(in: rig.b).first)
        #expect(try DocumentRules.parseObject(Array(rig.b.bytes(copy)))["title"] == "t1 from A")
        // Once fixed, the user's version is the document's.
        try rig.b.write(path, #"{"id":"doc","docType":"note","title":"typed in B"}"#)
        #expect(await eventually { rig.object(of: "doc", in: rig.a)?["title"] == "typed in B" })
    }

    @Test func anEmptyFolderReceivesEveryDocumentOnceAndSendsNoneBack() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        await rig.agentB?.stop()
        // Documents already on the server: B's first pull gets them in pages of many, the
        // path that writes new documents as a group.
        let ids = (0..<300).map { "p\($0)" } + ["n", "n-2"]
        for id in ids {
            #expect(try await rig.api.request("PUT", "/api/document", body: #"{"id":"\#(id)","docType":"note","n":"\#(id)"}"#).status == 200)
        }
        // A local document already holds note/n.json: the pulled "n" and "n-2" find other names,
        // and not the same one.
        let fresh = try TempFolder("folder-fresh")
        defer { fresh.remove() }
        try fresh.write("note/n.json", #"{"id":"local-n","docType":"note"}"#)
        let agent = try rig.start(fresh)
        defer { Task { await agent.stop() } }
        #expect(await eventually(timeout: .seconds(60)) { ids.allSatisfy { rig.object(of: $0, in: fresh)?["n"] == .string($0) } })
        let files = ids.compactMap { rig.file(of: $0, in: fresh) }
        #expect(Set(files).count == ids.count, "one file each")
        #expect(rig.file(of: "local-n", in: fresh) == "note/n.json", "the local document keeps its file")
        // Anything B had queued goes out before a change made after it.
        try fresh.write("note/marker.json", #"{"id":"marker","docType":"note"}"#)
        #expect(await eventually { (try? await rig.api.documents(type: "note")["marker"]) != nil })
        let server = try await rig.api.documents(type: "note")
        #expect(server["local-n"] != nil)
        let sentBack = ids.filter { server[$0]?["rev"] != .number("1") }
        #expect(sentBack == [], "no pulled document was sent back")
        #expect(!agent.stderr.contains("error"), "\(agent.stderr)")
    }

    @Test func aPulledDocumentThatWouldLandOutsideTheFolderIsRefused() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        // Written straight into the server's database, as a hostile or broken server would hold them.
        let hostile = [#"{"id":"../../escape","docType":"note"}"#, #"{"id":"ok1","docType":"../../etc"}"#,
                       #"{"id":"ok2","docType":"/abs"}"#, #"{"id":"ok3","docType":"a\u0000b"}"#,
                       #"{"id":"\#(String(repeating: "x", count: 300))","docType":"note"}"#, #"{"id":"ok4","docType":".hidden"}"#]
        let db = rig.work.file("server/documents.sqlite")
        for (i, body) in hostile.enumerated() {
            let sql = "INSERT INTO document (id, doc_type, body, rev, seq, updated_at, created_at, stored_at) VALUES ('h\(i)', 'x', '\(body.replacingOccurrences(of: "'", with: "''"))', 1, \(1000 + i), 0, 0, 0)"
            let p = try DocsyncProcess(executable: "/usr/bin/sqlite3", arguments: ["-cmd", ".timeout 10000", db, sql], logDirectory: rig.work.path, name: "sql\(i)")
            #expect(await p.wait() == 0, "\(p.stderr)")
        }
        try rig.a.write("notes/fine.json", #"{"id":"fine","docType":"note"}"#)
        #expect(await eventually { rig.object(of: "fine", in: rig.b) != nil })
        #expect(await eventually { rig.agentB!.stderr.components(separatedBy: "refused a document from the server").count - 1 == hostile.count }, "\(rig.agentB!.stderr)")
        let written = FileManager.default.enumerator(atPath: rig.b.path)?.compactMap { $0 as? String }.filter { !$0.hasPrefix(".docsync") } ?? []
        #expect(Set(written) == ["note", "note/fine.json"], "nothing else written: \(written)")
        #expect(!FileManager.default.fileExists(atPath: rig.b.path + "/../escape.json"))
    }
}
}
