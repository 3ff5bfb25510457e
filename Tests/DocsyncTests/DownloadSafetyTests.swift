import DocsyncAgent
import DocsyncModel
import DocsyncTestSupport
import Foundation
import NIOCore
import Synchronization
import Testing

/// Downloads against a server that says what the test tells it: hostile URLs and names, lying
/// hashes, files over the limit, a download cut short by a stop.
@Suite(.serialized) struct DownloadSafetyTests {
    static let content = String(repeating: "attached bytes\n", count: 2000)
    static let sha = ContentHash.sha256Hex(content.utf8)

    /// A pull reply holding one document with `properties`.
    static func pullReply(_ properties: [(String, String)], id: String = "doc") -> String {
        let members = properties.map { #""\#($0.0)":"\#($0.1)""# }.joined(separator: ",")
        return #"{"documents":{"success":[{"id":"\#(id)","docType":"note","rev":1,\#(members)}],"error":[]},"cursor":1,"more":false}"#
    }

    @Test func hostileURLsAndNamesWriteNothingOutsideTheFolderAndFetchNothingElsewhere() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let base = endpoint.url + "/api/app/upload/"
        let otherSHA = ContentHash.sha256Hex("something else".utf8)
        let big = String(repeating: "x", count: 100_000)
        let bigSHA = ContentHash.sha256Hex(big.utf8)
        let reply = Self.pullReply([
            ("sneaky/../../x", base + Self.sha + "/scan.pdf"),
            ("far", "http://127.0.0.2:9/api/app/upload/\(Self.sha)/scan.pdf"),
            ("climb", base + Self.sha + "/../../../etc/passwd"),
            ("liar", base + otherSHA + "/scan.pdf"),
            ("huge", base + bigSHA + "/big.bin"),
        ])
        endpoint.respond { method, path, _ in
            if path == "/api/sync" { return .init(body: reply) }
            if path.hasPrefix("/api/app/upload/\(bigSHA)") { return .init(body: big) }
            if path.hasPrefix("/api/app/upload/") { return .init(body: Self.content) }  // whatever the hash asked for
            return nil
        }
        let parent = try TempFolder("download-parent")
        defer { parent.remove() }
        let root = parent.file("folder")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        let folder = TempFolder(existing: root)
        var agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t") { $0.maxDownloadBytes = 64 << 10 }

        #expect(await eventually {
            let states = (try? await AgentStatus.read(root: root))?.downloads.map(\.state).sorted()
            return states == ["failed", "failed", "refused"]
        })
        let status = try await AgentStatus.read(root: root)
        let reasons = Dictionary(uniqueKeysWithValues: status.downloads.map { ($0.property, $0.error ?? "") })
        #expect(reasons["far"]?.contains("another server") == true, "\(reasons)")
        #expect(reasons["liar"]?.contains("other bytes") == true, "\(reasons)")
        #expect(reasons["huge"]?.contains("download limit") == true, "\(reasons)")
        #expect(status.text(now: 0).contains("not downloaded"))

        // The one good file is in the document's folder, under a name made here.
        let doc = try DocumentRules.parseObject(Array(folder.bytes("note/doc.json")))
        #expect(doc["sneaky/../../x"] == fileRef("doc.sneaky_______x.pdf"))
        #expect(try folder.read("note/doc.sneaky_______x.pdf") == Self.content)
        #expect(doc["climb"] == .string(base + Self.sha + "/../../../etc/passwd"), "not a file URL: an ordinary value")
        #expect(doc["far"]?.string?.hasPrefix("http://127.0.0.2") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["folder"], "nothing beside the folder")
        let tree = Set(FileManager.default.enumerator(atPath: root)!.compactMap { $0 as? String }.filter { !$0.hasPrefix(".docsync") })
        #expect(tree == ["note", "note/doc.json", "note/doc.sneaky_______x.pdf"])
        let fetched = endpoint.seen.filter { $0.0 == "GET" }.map(\.1)
        #expect(!fetched.contains { $0.contains("etc") }, "\(fetched)")
        try await agent.stop()

        // Restarted with a larger limit: what failed is tried again (the file over the old limit
        // now comes in); what was refused stays refused, and is still not fetched.
        agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t") { $0.maxDownloadBytes = 1 << 20 }
        #expect(await eventually { (try? folder.read("note/doc.huge.bin")) == big })
        #expect(await eventually { (try? await AgentStatus.read(root: root))?.downloads.map(\.state).sorted() == ["failed", "refused"] })
        try await agent.stop()
        await endpoint.stop()
    }

    /// Regression: two downloads sending a byte every few seconds held both download slots (the
    /// deadline covered the headers only), so an unrelated attachment never came.
    @Test func tricklingDownloadsAreCutAndAnotherAttachmentStillComes() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let trickles = ["a", "b"].map { "/api/app/upload/" + ContentHash.sha256Hex("trickle \($0)".utf8) + "/slow.pdf" }
        let normal = "/api/app/upload/" + Self.sha + "/scan.pdf"
        let docs = trickles.enumerated().map { #"{"id":"slow\#($0.offset)","docType":"note","rev":1,"scan":"\#(endpoint.url + $0.element)"}"# }
        endpoint.respond { _, path, body in
            if path == "/api/sync" {
                // The unrelated attachment comes once both trickles hold a slot.
                let busy = trickles.allSatisfy { t in endpoint.seen.contains { $0.1 == t } }
                let list = docs + (busy ? [#"{"id":"other","docType":"note","rev":1,"scan":"\#(endpoint.url + normal)"}"#] : [])
                return .init(body: #"{"documents":{"success":[\#(list.joined(separator: ","))],"error":[]},"cursor":\#(busy ? 2 : 1),"more":false}"#)
            }
            if path == normal { return .init(body: Self.content) }
            guard trickles.contains(path) else { return nil }
            return .init(headers: [("Content-Length", "1000000")], stream: {
                AsyncThrowingStream { continuation in
                    let task = Task {
                        for _ in 0..<600 {
                            continuation.yield(ByteBuffer(string: "x"))
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in task.cancel() }
                }
            })
        }
        let folder = try TempFolder("download-trickle")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t") {
            $0.requestTimeout = .seconds(1)
            $0.pollInterval = .milliseconds(200)
        }
        #expect(await eventually(timeout: .seconds(20)) { (try? folder.read("note/other.scan.pdf")) == Self.content }, "\(agent.logs.all.suffix(5))")
        #expect(await eventually {
            (try? await AgentStatus.read(root: folder.path))?.downloads.contains { $0.error?.contains("slower than") == true } == true
        }, "the cut downloads say why")
        try await agent.stop()
        await endpoint.stop()
    }

    /// Trust finding (fourth round, 11): eight trickling attachments were cut, but their retries
    /// kept the slots, and none of three fast attachments listed after them arrived. Files never
    /// tried go before retries, and a freed slot is taken at once.
    @Test func retriesOfSlowFilesNeverHoldSlotsAheadOfFilesNotTriedYet() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let slow = (0..<8).map { "/api/app/upload/" + ContentHash.sha256Hex("trickle \($0)".utf8) + "/slow.pdf" }
        let bodies = (0..<3).map { Self.content + "\($0)" }
        let fast: [String] = (0..<3).map { n in "/api/app/upload/" + ContentHash.sha256Hex(bodies[n].utf8) + "/fast\(n).pdf" }
        let slowDocs: [String] = slow.enumerated().map { #"{"id":"slow\#($0.offset)","docType":"note","rev":1,"scan":"\#(endpoint.url + $0.element)"}"# }
        let fastDocs: [String] = fast.enumerated().map { #"{"id":"fast\#($0.offset)","docType":"note","rev":1,"scan":"\#(endpoint.url + $0.element)"}"# }
        let docs = slowDocs + fastDocs
        endpoint.respond { _, path, _ in
            if path == "/api/sync" {
                return .init(body: #"{"documents":{"success":[\#(docs.joined(separator: ","))],"error":[]},"cursor":1,"more":false}"#)
            }
            if let n = fast.firstIndex(of: path) { return .init(body: bodies[n]) }
            guard slow.contains(path) else { return nil }
            return .init(headers: [("Content-Length", "1000000")], stream: {
                AsyncThrowingStream { continuation in
                    let task = Task {
                        for _ in 0..<600 {
                            continuation.yield(ByteBuffer(string: "x"))
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in task.cancel() }
                }
            })
        }
        let folder = try TempFolder("download-starve")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t") {
            $0.requestTimeout = .seconds(1)
            $0.pollInterval = .milliseconds(200)
        }
        #expect(await eventually(timeout: .seconds(15)) {
            (0..<3).allSatisfy { (try? folder.read("note/fast\($0).scan.pdf")) == bodies[$0] }
        }, "\(agent.logs.all.suffix(5))")
        try await agent.stop()
        await endpoint.stop()
    }

    /// Regression: a NUL in a pulled property's name cut the download's outbox key when read
    /// back; the entry was never deleted and the downloader woke every millisecond, for ever.
    @Test func aFileUnderAPropertyNameWithANulIsNotFetched() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let url = endpoint.url + "/api/app/upload/" + Self.sha + "/scan.pdf"
        endpoint.respond { _, path, _ in
            if path == "/api/sync" {
                return .init(body: #"{"documents":{"success":[{"id":"doc","docType":"note","rev":1,"a\u0000b":"\#(url)","scan":"\#(url)"}],"error":[]},"cursor":1,"more":false}"#)
            }
            return path.hasPrefix("/api/app/upload/") ? .init(body: Self.content) : nil
        }
        let folder = try TempFolder("download-nul")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { (try? folder.read("note/doc.scan.pdf")) == Self.content }, "the other property's file comes")
        #expect((1...2).contains(agent.logs.count(containing: "not fetched, the property cannot carry one: its name holds a control character")), "said, not repeated")
        // The file is renamed into place before its job is deleted: wait for the job's end.
        #expect(await eventually { (try? await agent.index.read { try $0.pendingCount(kind: .download) }) == 0 }, "no job is left behind")
        try await agent.stop()
        await endpoint.stop()
    }

    /// Regression: a 302 to another port was followed.
    @Test func aRedirectIsNotFollowed() async throws {
        let endpoint = HostileEndpoint()
        let elsewhere = HostileEndpoint()
        try await endpoint.start()
        try await elsewhere.start()
        elsewhere.respond { _, _, _ in .init(body: Self.content) }
        let reply = Self.pullReply([("scan", endpoint.url + "/api/app/upload/" + Self.sha + "/scan.pdf")])
        endpoint.respond { _, path, _ in
            if path == "/api/sync" { return .init(body: reply) }
            guard path.hasPrefix("/api/app/upload/") else { return nil }
            return .init(status: 302, headers: [("Location", elsewhere.url + "/api/app/upload/" + Self.sha + "/scan.pdf")])
        }
        let folder = try TempFolder("download-redirect")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually {
            (try? await AgentStatus.read(root: folder.path))?.downloads.contains { $0.error?.contains("302") == true } == true
        }, "\(agent.logs.all.suffix(4))")
        #expect(elsewhere.seen.isEmpty, "nothing was asked of the other server")
        #expect(!folder.exists("note/doc.scan.pdf"))
        try await agent.stop()
        await endpoint.stop()
        await elsewhere.stop()
    }

    @Test func aDownloadCutShortByAStopStartsOverAtTheNextStartAndLeavesOneFile() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let piece = ByteBuffer(string: Self.content)
        let half = Mutex(true)  // until the test says otherwise, the file stops half-way and hangs
        let reply = Self.pullReply([("scan", endpoint.url + "/api/app/upload/" + Self.sha + "/scan.pdf")])
        endpoint.respond { _, path, _ in
            if path == "/api/sync" { return .init(body: reply) }
            guard path.hasPrefix("/api/app/upload/") else { return nil }
            if !half.withLock({ $0 }) { return .init(body: Self.content) }
            return .init(headers: [("Content-Length", String(piece.readableBytes))], stream: {
                AsyncThrowingStream { continuation in
                    continuation.yield(piece.getSlice(at: 0, length: piece.readableBytes / 2)!)
                    // Never finished: the agent's stop cuts it.
                }
            })
        }
        let folder = try TempFolder("download-restart")
        defer { folder.remove() }
        var agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually {
            (try? await AgentStatus.read(root: folder.path))?.downloads.first.map { $0.state == "downloading" && $0.bytesReceived > 0 } == true
        })
        #expect(try await AgentStatus.read(root: folder.path).text(now: 0).contains("downloading"))
        try await agent.stop()
        #expect(!folder.exists("note/doc.scan.pdf"))

        half.withLock { $0 = false }
        agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { (try? folder.read("note/doc.scan.pdf")) == Self.content })
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.downloads.isEmpty == true })
        let doc = try DocumentRules.parseObject(Array(folder.bytes("note/doc.json")))
        #expect(doc["scan"] == fileRef("doc.scan.pdf"))
        let siblings = try FileManager.default.contentsOfDirectory(atPath: folder.file("note")).filter { !$0.hasPrefix(".") }
        #expect(siblings.sorted() == ["doc.json", "doc.scan.pdf"], "one file, no duplicate")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file(".docsync/files/tmp")).isEmpty, "no temporary left")
        #expect(endpoint.seen.filter { $0.0 == "GET" && $0.1.hasPrefix("/api/app/upload/") }.count == 2, "started over once")
        try await agent.stop()
        await endpoint.stop()
    }

    /// `docsync sync` (one shot) ends with the files in place, or says what is left.
    @Test func aOneShotSyncReturnsWithTheFilesInPlace() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let reply = Self.pullReply([("scan", endpoint.url + "/api/app/upload/" + Self.sha + "/scan.pdf")])
        endpoint.respond { _, path, _ in
            if path == "/api/sync" { return .init(body: reply) }
            return path.hasPrefix("/api/app/upload/") ? .init(body: Self.content) : nil
        }
        let folder = try TempFolder("download-sync")
        defer { folder.remove() }
        let agent = try Agent(
            options: AgentOptions(root: folder.path, endpointURL: endpoint.url, token: "t"), endpoint: pingPong(endpoint.url), logger: CapturedLogs().logger())
        let report = try await agent.syncOnce()
        #expect(report.complete, "\(report)")
        #expect(try folder.read("note/doc.scan.pdf") == Self.content)
        #expect(try DocumentRules.parseObject(Array(folder.bytes("note/doc.json")))["scan"] == fileRef("doc.scan.pdf"))
        await endpoint.stop()
    }

    @Test func theSameContentIsFetchedOnceHoweverManyDocumentsNameIt() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let url = endpoint.url + "/api/app/upload/" + Self.sha + "/scan.pdf"
        let docs = (1...3).map { #"{"id":"d\#($0)","docType":"note","rev":1,"scan":"\#(url)"}"# }.joined(separator: ",")
        endpoint.respond { _, path, _ in
            if path == "/api/sync" { return .init(body: #"{"documents":{"success":[\#(docs)],"error":[]},"cursor":1,"more":false}"#) }
            return path.hasPrefix("/api/app/upload/") ? .init(body: Self.content) : nil
        }
        let folder = try TempFolder("download-once")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { (1...3).allSatisfy { (try? folder.read("note/d\($0).scan.pdf")) == Self.content } })
        let gets = { endpoint.seen.filter { $0.0 == "GET" && $0.1.hasPrefix("/api/app/upload/") }.count }
        #expect(gets() == 1)
        // The cache costs no second copy, but no two files of the tree share their bytes.
        let inodes = try (1...3).map { try FileManager.default.attributesOfItem(atPath: folder.file("note/d\($0).scan.pdf"))[.systemFileNumber] as? UInt64 }
        #expect(Set(inodes).count == 3, "\(inodes)")

        // Changed in place (through a link to the cache, if it is one): the cache is not trusted
        // for those bytes any more, and the next document naming them gets them from the server.
        for n in 1...3 {
            let handle = try FileHandle(forWritingTo: folder.url("note/d\(n).scan.pdf"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("appended in place\n".utf8))
            try handle.close()
        }
        endpoint.respond { _, path, _ in
            if path == "/api/sync" {
                return .init(body: #"{"documents":{"success":[{"id":"d4","docType":"note","rev":1,"scan":"\#(url)"}],"error":[]},"cursor":2,"more":false}"#)
            }
            return path.hasPrefix("/api/app/upload/") ? .init(body: Self.content) : nil
        }
        #expect(await eventually { (try? folder.read("note/d4.scan.pdf")) == Self.content })
        #expect(gets() == 2)
        try await agent.stop()
        await endpoint.stop()
    }
    /// A version the server made before our upload gave the property its URL (Kinto's plugin
    /// stores the file, then the URL is written: a pull can fall between) holds `null` there. It
    /// says nothing of the file: the file stays. A version made after the upload that holds
    /// `null` is a removal, and the file goes to the trash.
    @Test func aVersionOlderThanOurUploadDoesNotRemoveTheFile() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let url = endpoint.url + "/api/app/upload/" + Self.sha + "/scan.pdf"
        // What pulls get: nothing, then a version between the document's creation (rev 1) and the
        // upload's (rev 3), then a later one.
        let pulled = Mutex("")
        endpoint.respond { method, path, body in
            if path == "/api/app/upload", method == "POST" {
                // More than the property changed (as the plugin adds its metadata): the index keeps
                // the revision it had, and the next pulls bring what the server holds.
                return .init(body: #"{"data":{"id":"doc","docType":"note","rev":3,"scan":"\#(url)","meta":"upload"}}"#)
            }
            guard path == "/api/sync" else { return nil }
            if body.contains(#""id":"doc""#) {
                return .init(body: #"{"documents":{"success":[{"id":"doc","rev":1}],"error":[]},"cursor":1,"more":false}"#)
            }
            let docs = pulled.withLock { $0 }
            return .init(body: #"{"documents":{"success":[\#(docs)],"error":[]},"cursor":\#(docs.isEmpty ? 1 : 9),"more":false}"#)
        }
        let folder = try TempFolder("download-stale")
        defer { folder.remove() }
        try folder.write("note/scan.pdf", Self.content)
        try folder.write("note/doc.json", #"{"id":"doc","docType":"note","scan":{"$file":"scan.pdf"}}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { agent.logs.count(containing: "uploaded") == 1 })

        pulled.withLock { $0 = #"{"id":"doc","docType":"note","rev":2,"scan":null,"meta":"before the upload"}"# }
        #expect(await eventually { (try? DocumentRules.parseObject(Array(folder.bytes("note/doc.json"))))?["meta"] == .string("before the upload") })
        #expect(try DocumentRules.parseObject(Array(folder.bytes("note/doc.json")))["scan"] == fileRef("scan.pdf"))
        #expect(try folder.read("note/scan.pdf") == Self.content)
        #expect(agent.logs.count(containing: "removed on the server") == 0, "\(agent.logs.all)")

        pulled.withLock { $0 = #"{"id":"doc","docType":"note","rev":4,"scan":null,"meta":"after the upload"}"# }
        #expect(await eventually { (try? DocumentRules.parseObject(Array(folder.bytes("note/doc.json"))))?["meta"] == .string("after the upload") })
        #expect(try DocumentRules.parseObject(Array(folder.bytes("note/doc.json")))["scan"] == .null)
        #expect(await eventually { !folder.exists("note/scan.pdf") }, "removed on the server: moved to the trash")
        try await agent.stop()
        await endpoint.stop()
    }
}
