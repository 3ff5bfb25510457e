import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// End-to-end encryption with the real binary (issue 59): folders that sync through a server that
/// keeps only ciphertext, on the reference endpoint and on a real Kinto.
extension HeavySuites {
@Suite(.serialized) struct EncryptionTests {
    /// A rig: a token, a passphrase, and `docsync` commands against one endpoint.
    struct Rig {
        let work: TempFolder
        let endpoint: String
        let tokenFile: String
        let passphraseFile: String

        init(work: TempFolder, endpoint: String, token: String) throws {
            self.work = work
            self.endpoint = endpoint
            try work.write("token", token + "\n")
            try work.write("passphrase", "correct horse battery staple\n")
            tokenFile = work.file("token")
            passphraseFile = work.file("passphrase")
        }

        /// `docsync ARGS DIR --endpoint … --token-file …`, its exit status and output.
        func run(_ arguments: [String], _ folder: TempFolder, endpoint: String? = nil, passphrase: Bool = true) async throws -> (Int32, String) {
            var command = arguments + [folder.path, "--endpoint", endpoint ?? self.endpoint, "--token-file", tokenFile]
            if passphrase && arguments != ["encrypt", "change-passphrase"] { command += ["--passphrase-file", passphraseFile] }
            let (status, out, err) = try await runDocsync(command, logDirectory: work.path)
            return (status, out + err)
        }

        /// `encrypt init` at a cheap scrypt cost (the derivation's price is the benchmark's matter).
        func encrypt(_ folder: TempFolder, endpoint: String? = nil) async throws -> String {
            let (status, output) = try await run(["encrypt", "init", "--scrypt-log-n", "10"], folder, endpoint: endpoint)
            #expect(status == 0, "\(output)")
            return output
        }

        /// `docsync sync` that must end in sync.
        func sync(_ folder: TempFolder, _ extra: [String] = [], passphrase: Bool = true) async throws {
            let (status, output) = try await run(["sync"] + extra, folder, passphrase: passphrase)
            #expect(status == 0, "\(output)")
        }
    }

    static func serve(_ work: TempFolder, extra: [String] = []) async throws -> (DocsyncProcess, String) {
        try work.write("server-token", "tok-e2ee\n")
        let server = try DocsyncProcess(
            ["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("server-token"), "--log-level", "debug"] + extra,
            logDirectory: work.path, name: "serve")
        return (server, try await server.firstLine())
    }

    @Test func twoAgentsThroughTheReferenceEndpointMergeConflictSelectAndShareFiles() async throws {
        let work = try TempFolder("e2ee-ref")
        let (server, url) = try await Self.serve(work)
        defer { Task { await server.stop(); work.remove() } }
        try await twoAgentsMergeConflictSelectAndShareFiles(try Rig(work: work, endpoint: url, token: "tok-e2ee"))
    }

    @Test func twoAgentsThroughARealKintoMergeConflictSelectAndShareFiles() async throws {
        let work = try TempFolder("e2ee-kinto")
        let kinto = try await KintoServer.start(attachments: true)
        defer { Task { await kinto.stop(); work.remove() } }
        let rig = try Rig(work: work, endpoint: kinto.endpoint(bucket: "folder"), token: "alice:secret")
        try await twoAgentsMergeConflictSelectAndShareFiles(rig)
        // Kinto holds the envelope and the seal, nothing of the documents' content.
        let records = try await APIClient(baseURL: kinto.url, token: "").request(
            "GET", "/buckets/folder/collections/note/records", token: .some(nil),
            headers: [("Authorization", "Basic " + Data("alice:secret".utf8).base64EncodedString())])
        #expect(records.status == 200)
        let text = String(decoding: records.body, as: UTF8.self)
        #expect(text.contains("$enc") && !text.contains("MARKER"), "\(text.prefix(500))")
    }

    func twoAgentsMergeConflictSelectAndShareFiles(_ rig: Rig) async throws {
        let (a, b, notesOnly) = (try TempFolder("e2ee-a"), try TempFolder("e2ee-b"), try TempFolder("e2ee-notes"))
        defer { for f in [a, b, notesOnly] { f.remove() } }
        try a.write("note/n1.json", #"{"id":"n1","left MARKER":"one","right":"one","title":"first"}"#)
        try a.write("task/t1.json", #"{"id":"t1","what":"MARKER task"}"#)
        try a.writeRandom("note/scan.bin", size: 300_000, seed: 7)
        try a.write("note/n2.json", #"{"id":"n2","scan":{"$file":"scan.bin"}}"#)
        _ = try await rig.encrypt(a)
        try await rig.sync(a)  // the upload's URL goes out sealed with its document
        try await rig.sync(b)
        #expect(try b.read("note/n1.json").contains("\"left MARKER\": \"one\""))
        #expect(b.exists("task/t1.json"))
        #expect(await eventually { (try? Data(contentsOf: URL(fileURLWithPath: b.file("note/n2.scan.bin")))) == (try? Data(contentsOf: URL(fileURLWithPath: a.file("note/scan.bin")))) },
                "the attachment arrives byte-identical: \(DocsyncWatcherProbe.walk(b.path).map(\.0))")

        // Different fields edited on each side: merged on the agents, over sealed versions.
        try carefulEdit(a, "note/n1.json") { $0["left MARKER"] = "A's" }
        try carefulEdit(b, "note/n1.json") { $0["right"] = "B's" }
        try await rig.sync(a)
        try await rig.sync(b)
        try await rig.sync(a)
        for folder in [a, b] {
            let n1 = try DocumentRules.parseObject(Array(folder.bytes("note/n1.json")))
            #expect(n1["left MARKER"] == "A's" && n1["right"] == "B's", "\(n1)")
        }
        // The same field: the server's version in the file, the other beside it as a conflict copy.
        try carefulEdit(a, "note/n1.json") { $0["title"] = "A's title" }
        try carefulEdit(b, "note/n1.json") { $0["title"] = "B's title" }
        try await rig.sync(a)
        let (status, _) = try await rig.run(["sync"], b)
        #expect(status == 0 || status == 2)
        let copies = conflictCopies(in: b)
        #expect(copies.count == 1, "\(DocsyncWatcherProbe.walk(b.path).map(\.0))")
        let both = try b.read("note/n1.json") + (copies.first.map { try b.read($0) } ?? "")
        #expect(both.contains("A's title") && both.contains("B's title"), "one in the file, the other in the copy")

        // Selective sync by docType works on the clear envelope.
        try await rig.sync(notesOnly, ["--types", "note"])
        #expect(notesOnly.exists("note/n1.json") && !notesOnly.exists("task/t1.json"))
    }

    @Test func anAgentWithoutThePassphraseRefusesToStartAndOneWithAWrongOneWritesAndSendsNothing() async throws {
        let work = try TempFolder("e2ee-refuse")
        let (server, url) = try await Self.serve(work)
        let proxy = FaultProxy(upstream: url)
        try await proxy.start()
        let (a, b) = (try TempFolder("e2ee-refuse-a"), try TempFolder("e2ee-refuse-b"))
        defer { Task { await proxy.stop(); await server.stop(); for f in [work, a, b] { f.remove() } } }
        let rig = try Rig(work: work, endpoint: proxy.url, token: "tok-e2ee")
        try a.write("note/n1.json", #"{"id":"n1","text":"MARKER"}"#)
        _ = try await rig.encrypt(a)
        try b.write("note/mine.json", #"{"id":"mine","text":"in clear"}"#)

        let before = proxy.requestBytes
        let (clear, said) = try await rig.run(["sync"], b, passphrase: false)
        #expect(clear != 0)
        #expect(said.contains("holds an end-to-end encrypted folder") && said.contains("--passphrase-file"), "\(said)")
        try work.write("wrong", "not the passphrase at all\n")
        let (status, out, err) = try await runDocsync(
            ["sync", b.path, "--endpoint", proxy.url, "--token-file", rig.tokenFile, "--passphrase-file", work.file("wrong")], logDirectory: work.path)
        #expect(status != 0)
        #expect(out.isEmpty && err.contains("the passphrase does not open"), "\(out)\(err)")
        #expect(proxy.requestBytes == before, "nothing was sent: only the key document was read")
        #expect(!b.exists(".docsync"), "nothing was written")
        #expect(try b.read("note/mine.json") == #"{"id":"mine","text":"in clear"}"#)

        // A document in clear sent anyway (an older docsync, curl) is refused by the server.
        let api = APIClient(baseURL: url, token: "tok-e2ee")
        let refused = try await api.request("PUT", "/api/document", body: #"{"id":"leak","docType":"note","text":"MARKER"}"#)
        #expect(refused.status == 422, "\(refused.body)")
        #expect(try await api.request("GET", "/api/document/leak").status == 404)
    }

    @Test func aPassphraseChangeSendsUnderAKilobyteAndTheRecoveryKeyOpensTheFolder() async throws {
        let work = try TempFolder("e2ee-passphrase")
        let (server, url) = try await Self.serve(work)
        let proxy = FaultProxy(upstream: url)
        try await proxy.start()
        let (a, b) = (try TempFolder("e2ee-pass-a"), try TempFolder("e2ee-pass-b"))
        defer { Task { await proxy.stop(); await server.stop(); for f in [work, a, b] { f.remove() } } }
        let rig = try Rig(work: work, endpoint: proxy.url, token: "tok-e2ee")
        for n in 0..<50 { try a.write("note/n\(n).json", #"{"id":"n\#(n)","text":"\#(String(repeating: "x", count: 500))"}"#) }
        let output = try await rig.encrypt(a)
        let recovery = try #require(output.split(separator: "\n").first { $0.hasPrefix("  ") }?.trimmingCharacters(in: .whitespaces))
        #expect(recovery.count == 64, "52 letters in groups of four: \(recovery)")

        try work.write("new", "a new passphrase for all\n")
        let before = proxy.requestBytes
        let (changed, said, _) = try await runDocsync(
            ["encrypt", "change-passphrase", a.path, "--endpoint", proxy.url, "--token-file", rig.tokenFile, "--passphrase-file", rig.passphraseFile,
             "--new-passphrase-file", work.file("new")], logDirectory: work.path)
        #expect(changed == 0, "\(said)")
        #expect(proxy.requestBytes - before < 1024, "\(proxy.requestBytes - before) bytes sent")
        let (old, _) = try await rig.run(["sync"], b)
        #expect(old != 0, "the old passphrase no longer opens it")

        // The passphrase is lost: the recovery key sets another one.
        try work.write("recovery", recovery + "\n")
        try work.write("third", "the third passphrase\n")
        let (recovered, why, _) = try await runDocsync(
            ["encrypt", "change-passphrase", a.path, "--endpoint", proxy.url, "--token-file", rig.tokenFile, "--recovery-key-file", work.file("recovery"),
             "--new-passphrase-file", work.file("third")], logDirectory: work.path)
        #expect(recovered == 0, "\(why)")
        let (status, out, err) = try await runDocsync(
            ["sync", b.path, "--endpoint", proxy.url, "--token-file", rig.tokenFile, "--passphrase-file", work.file("third")], logDirectory: work.path)
        #expect(status == 0, "\(out)\(err)")
        #expect(DocsyncWatcherProbe.walk(b.path).count == 50)
    }
}
}
