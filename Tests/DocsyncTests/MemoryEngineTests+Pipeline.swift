@testable import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// A first pull of many pages: each page's record commits while the next page's files are made
/// (``PendingRecords``), and the watcher's report of the pull's own new files is dropped without
/// a scan (``OwnNewFiles``). What a user would check: every file there and recorded, nothing sent
/// back, the folder in sync; and a save landing on a file just pulled is still sent.
extension MemoryEngineTests {
    /// Documents changed a minute ago (as on a server a folder joins): their files are dated, so
    /// their stats are settled and the pull's own-file reports are recognised.
    func putOld(_ server: MemoryServer, _ body: String) async throws {
        _ = try await server.store.put(DocumentRules.parseObject(Array(body.utf8)), now: Self.now() - 60_000)
    }

    @Test func aPullOfManyPagesRecordsEveryFileOnceAndSendsNothingBack() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("pipelined-pull")
        defer { folder.remove() }
        let count = 2 * server.pageSize + 500
        for i in 0..<count { try await putOld(server, #"{"id":"p\#(i)","docType":"note","n":\#(i)}"#) }
        let agent = try await agent(folder, server, onDisk: true)
        let index = agent.index
        #expect(await eventually(timeout: Self.patience) {
            (try? await index.read { try $0.documents(ids: (0..<count).map { "p\($0)" }).count }) == count
        }, "\(agent.logs.all.suffix(6))")
        #expect(await eventually(timeout: Self.patience) { (try? await AgentStatus.read(index))?.inSync() == true })
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.file("note"))
        #expect(files.count == count && !files.contains { $0.contains("-2.json") }, "one file a document")
        let rows = try await index.read { tx in try tx.documents(ids: (0..<count).map { "p\($0)" }) }
        #expect(rows.values.allSatisfy { $0.state == .synced && $0.serverRev == 1 && $0.path == "note/\($0.id).json" })
        let revisions = try await (0..<count).asyncMap { try await stored(server, "p\($0)").flatMap(DocumentRules.revision(of:)) }
        #expect(revisions.allSatisfy { $0 == 1 }, "nothing the agent pulled went back to the server")
        let cursor = try await index.read { try $0.meta(.cursor) }
        #expect(cursor == String(try await server.store.latestSeq()), "the cursor stored is the last page's")
        try await agent.stop()
    }

    /// The watcher's report of a new pulled file is dropped only while the file holds what was
    /// written: a save landing before the page is recorded (and so before the report) is sent.
    @Test func aSaveOnAFileJustPulledBeforeItIsRecordedIsSent() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("save-on-new-pulled")
        defer { folder.remove() }
        let armed = Mutex(true)
        let agent = try await agent(folder, server) { options in
            options.beforeRecordingAPulledWrite = { path in
                guard path == "note/n.json", armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
                #expect((try? carefulEdit(folder, path) { $0["mine"] = .string("kept") }) != nil)
            }
        }
        // The folder is there already: the watcher reports the new file alone, not a new folder to walk.
        try folder.write("note/local.json", #"{"id":"local","docType":"note"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "local")) != nil })
        try await putOld(server, #"{"id":"n","docType":"note","title":"pulled"}"#)
        let both: @Sendable (JSONObject?) -> Bool = { $0?["title"] == .string("pulled") && $0?["mine"] == .string("kept") }
        #expect(await eventually(timeout: Self.patience) { both(try? await stored(server, "n")) }, "the save reaches the server: \(agent.logs.all.suffix(6))")
        #expect(both(try? DocumentRules.parseObject(Array(folder.bytes("note/n.json")))), "and stays in the file")
        #expect(!armed.withLock { $0 }, "the save was made between the write and its record")
        try await agent.stop()
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
