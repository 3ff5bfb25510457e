import DocsyncAgent
import DocsyncIndex
import DocsyncModel
@testable import DocsyncServer
import DocsyncTestSupport
import Foundation
import Testing

/// How `{"$file": …}` references resolve, without touching the disk.
@Suite struct FileReferenceRulesTests {
    @Test func theQuickCheckFindsEveryReferenceAndSkipsTextWithout() {
        #expect(FileReference.mayAppear(in: #"{"scan":{"$file":"a.pdf"}}"#))
        #expect(FileReference.mayAppear(in: #"{"$file":"x"}"#))
        #expect(FileReference.mayAppear(in: #"{"price":"$5","$x":1,"a":{"$file":"b"}}"#))
        #expect(!FileReference.mayAppear(in: #"{"price":"$5","$files":1}"#))
        #expect(!FileReference.mayAppear(in: #"{"note":"costs $file"}"#))
        #expect(!FileReference.mayAppear(in: "$file\""))
        #expect(!FileReference.mayAppear(in: ""))
    }

    @Test func pathsResolveAgainstTheDocumentsFolderAndMayNotLeaveTheRoot() {
        #expect(FileReference.resolve("scans/42.pdf", documentPath: "notes/a.json") == .success("notes/scans/42.pdf"))
        #expect(FileReference.resolve("../scans/42.pdf", documentPath: "notes/a.json") == .success("scans/42.pdf"))
        #expect(FileReference.resolve("./x/./y.bin", documentPath: "a.json") == .success("x/y.bin"))
        #expect(FileReference.resolve("../../etc/passwd", documentPath: "notes/a.json") == .failure(.outsideRoot("../../etc/passwd")))
        #expect(FileReference.resolve("/etc/passwd", documentPath: "notes/a.json") == .failure(.absolute("/etc/passwd")))
        #expect(FileReference.resolve("", documentPath: "a.json") == .failure(.empty))
        #expect(FileReference.resolve("../.docsync/index.sqlite", documentPath: "n/a.json") == .failure(.stateFolder("../.docsync/index.sqlite")))
    }

    @Test func onlyTopLevelSingleKeyObjectsAreReferences() throws {
        let object = try JSONParser.parse(#"""
            {"a": {"$file": "x.pdf"}, "b": {"$file": 42}, "c": {"$file": "y", "other": 1}, "d": {"inner": {"$file": "z"}}, "e": "plain"}
            """#).object!
        let refs = FileReference.all(in: object, documentPath: "doc.json")
        #expect(refs.map(\.property) == ["a", "b", "c"])
        #expect(refs[0].resolved == .success("x.pdf"))
        #expect(refs[1].resolved == .failure(.malformed))
        #expect(refs[2].resolved == .failure(.malformed))
    }

    @Test func uploadedFileNamesAreSanitised() {
        #expect(UploadRoutes.sanitisedFileName("../../etc/passwd") == "passwd")
        #expect(UploadRoutes.sanitisedFileName("C:\\Users\\me\\scan 1.pdf") == "scan_1.pdf")
        #expect(UploadRoutes.sanitisedFileName(".hidden") == "hidden")
        #expect(UploadRoutes.sanitisedFileName("\"><script>.png") == "_script_.png")
        #expect(UploadRoutes.sanitisedFileName(nil) == "file")
        #expect(UploadRoutes.sanitisedFileName("日本.pdf") == "_.pdf")
    }
}

/// The streaming multipart splitter, fed in every chunking from one byte up.
@Suite struct MultipartStreamTests {
    @Test func partsComeOutWholeHoweverTheBodyIsChunked() throws {
        // Content that nearly matches the delimiter, CRs and dashes included.
        let file = Array("a\r\n--boundar\r\n--bound\r\r\n-- x\r\n".utf8) + (0..<300).map { UInt8($0 % 256) }
        var body = Array("--boundary\r\nContent-Disposition: form-data; name=\"targetDocument\"\r\n\r\n{\"targetId\":\"d\"}".utf8)
        body += Array("\r\n--boundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body += file
        body += Array("\r\n--boundary--\r\n".utf8)
        for chunkSize in [1, 2, 3, 7, 13, 64, body.count] {
            var stream = MultipartStream(boundary: "boundary")
            var parts: [([String: String], [UInt8])] = []
            var current: ([String: String], [UInt8])?
            for start in stride(from: 0, to: body.count, by: chunkSize) {
                try body[start..<min(start + chunkSize, body.count)].withUnsafeBytes { raw in
                    try stream.feed(raw) { event in
                        switch event {
                        case .headers(let h): current = (h, [])
                        case .body(let bytes): current!.1 += bytes
                        case .partEnd: parts.append(current!); current = nil
                        }
                    }
                }
            }
            #expect(stream.isComplete)
            #expect(parts.count == 2, "chunk size \(chunkSize)")
            #expect(parts.first?.1 == Array(#"{"targetId":"d"}"#.utf8))
            #expect(parts.last?.0["content-type"] == "image/png")
            #expect(parts.last?.1 == file, "chunk size \(chunkSize)")
        }
    }
}

/// The reference endpoint's FileUpload route, driven over real HTTP.
@Suite struct UploadEndpointTests {
    /// Servers sharing one uploads folder: one starting leaves the others' uploads in flight alone
    /// and clears only what no upload has written to for an hour.
    @Test func aServerStartingLeavesUploadsInFlightOnASharedFolderAlone() throws {
        let folder = try TempFolder("shared-uploads")
        defer { folder.remove() }
        try folder.write("uploads/tmp/receiving", "half a file")
        try folder.write("uploads/tmp/abandoned", "cut short")
        var old = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, folder.file("uploads/tmp/abandoned"), &old, 0) == 0)
        _ = try BlobDirectory(root: folder.file("uploads"))
        #expect(FileManager.default.fileExists(atPath: folder.file("uploads/tmp/receiving")))
        #expect(!FileManager.default.fileExists(atPath: folder.file("uploads/tmp/abandoned")))
    }

    @Test func anUploadSetsThePropertyAndServesTheSameBytesOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let api = server.api
        #expect(try await api.request("PUT", "/api/document", body: #"{"id":"d1","docType":"note","title":"t"}"#).status == 200)
        #expect(try await api.request("PUT", "/api/document", body: #"{"id":"d2","docType":"note"}"#).status == 200)
        let bytes = Array("hello, attachment".utf8)
        let first = try await api.upload(bytes, fileName: "hello.txt", targetID: "d1", docType: "note", property: "file")
        #expect(first.status == 200, "\(first.text)")
        let doc = try #require(first.json?.object?["data"]?.object)
        let url = try #require(doc["file"]?.string)
        #expect(url.hasPrefix(server.url + "/api/app/upload/" + ContentHash.sha256Hex(bytes)))
        #expect(doc["title"] == "t")
        #expect(doc["rev"] == .number("2"))
        // The same bytes for another document: stored once.
        let second = try await api.upload(bytes, fileName: "again.txt", targetID: "d2", docType: "note", property: "copy")
        #expect(second.status == 200)
        let stats = try await api.request("GET", "/api/stats")
        #expect(stats.json?.object?["data"]?.object?["uploads"] == .number("1"))
        let download = try await api.download(url)
        #expect(download.status == 200)
        #expect(download.sha256 == ContentHash.sha256Hex(bytes))
        #expect(download.headers.first { $0.0.lowercased() == "content-type" }?.1 == "text/plain")
        #expect(download.headers.first { $0.0.lowercased() == "content-length" }?.1 == String(bytes.count))
        #expect(try await api.download(url, token: .some(nil)).status == 401)
        #expect(try await api.download(server.url + "/api/app/upload/" + String(repeating: "0", count: 64)).status == 404)
    }

    @Test func refusedUploadsSayWhyAndLeaveNothingBehind() async throws {
        let server = try await TestServer.start(maxUploadBytes: 1000)
        defer { Task { await server.stop() } }
        let api = server.api
        #expect(try await api.request("PUT", "/api/document", body: #"{"id":"d1","docType":"note"}"#).status == 200)
        let tooLarge = try await api.upload([UInt8](repeating: 7, count: 5000), fileName: "big.bin", targetID: "d1", docType: "note", property: "f")
        #expect(tooLarge.status == 413)
        #expect(tooLarge.text.contains("limit of 1000 bytes"))
        let noDocument = try await api.upload([1, 2, 3], fileName: "x.bin", targetID: "nope", docType: "note", property: "f")
        #expect(noDocument.status == 404)
        let reserved = try await api.upload([1, 2, 3], fileName: "x.bin", targetID: "d1", docType: "note", property: "id")
        #expect(reserved.status == 400)
        let wrongType = try await api.upload([1, 2, 3], fileName: "x.bin", targetID: "d1", docType: "other", property: "f")
        #expect(wrongType.status == 400)
        let notMultipart = try await api.request("POST", "/api/app/upload", body: "{}")
        #expect(notMultipart.status == 415)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: server.data.file("uploads/tmp"))
        #expect(leftovers.isEmpty)
        #expect(try await api.documents(type: "note")["d1"]?["f"] == nil)
    }
}

extension LongSuites {
/// Attachments end to end: the real `docsync serve` and `docsync watch` processes, real files.
@Suite(.serialized) struct AttachmentTests {
    final class Rig: @unchecked Sendable {
        let work: TempFolder
        let docs: TempFolder
        let server: DocsyncProcess
        let url: String
        let api: APIClient
        var agents: [DocsyncProcess] = []

        init() async throws {
            work = try TempFolder("att-work")
            docs = try TempFolder("att-docs")
            try work.write("token", "att-token\n")
            server = try DocsyncProcess(
                ["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")], logDirectory: work.path, name: "serve")
            url = try await server.firstLine()
            api = APIClient(baseURL: url, token: "att-token")
        }

        @discardableResult
        func startAgent() throws -> DocsyncProcess {
            let agent = try DocsyncProcess(
                ["watch", docs.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-\(agents.count)")
            agents.append(agent)
            return agent
        }

        var agent: DocsyncProcess { agents.last! }

        func document(_ id: String) async throws -> JSONObject? { try await api.documents(type: "note")[id] }

        /// The SHA-256 in a reference endpoint URL (`…/api/app/upload/<sha256>/<name>`).
        func sha(in url: String?) -> String? {
            guard let url, let range = url.range(of: "/api/app/upload/") else { return nil }
            return String(url[range.upperBound...].prefix(64))
        }

        /// Uploads the server has received (one log line each).
        var uploadsReceived: Int { server.stderr.components(separatedBy: "stored upload").count - 1 }

        /// Content-addressed files the server holds.
        func storedBlobs() -> [String] {
            let root = work.file("server/uploads")
            return (FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? [])
                .filter { !$0.hasPrefix("tmp") && $0.split(separator: "/").count == 2 }
        }

        /// Nothing queued in the agent's index (documents or uploads).
        func idle() async throws -> Bool {
            let index = try Index(path: docs.file(".docsync/index.sqlite"))
            return try await index.read { try $0.pendingCount() == 0 }
        }

        func finish() async {
            for agent in agents { await agent.stop() }
            await server.stop()
            work.remove()
            docs.remove()
        }
    }

    @Test func aDocumentWithTwoAttachmentsHoldsTwoURLsThatDownloadByteIdentical() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let bigSHA = try rig.docs.writeRandom("scans/big.bin", size: 50 << 20, seed: 1)
        let photoSHA = try rig.docs.writeRandom("notes/photo.jpg", size: 300_000, seed: 2)
        let text = #"{"id":"a","docType":"note","title":"two files","scan":{"$file":"../scans/big.bin"},"photo":{"$file":"photo.jpg"}}"#
        try rig.docs.write("notes/a.json", text)
        try rig.startAgent()

        let arrived = await eventually(timeout: .seconds(120)) {
            guard let doc = try? await rig.document("a") else { return false }
            return doc["scan"]?.string != nil && doc["photo"]?.string != nil
        }
        #expect(arrived, "\(rig.agent.stderr)")
        let doc = try #require(try await rig.document("a"))
        #expect(doc["title"] == "two files")
        let scan = try await rig.api.download(try #require(doc["scan"]?.string))
        #expect(scan.status == 200)
        #expect(scan.sha256 == bigSHA)
        #expect(scan.length == 50 << 20)
        let photo = try await rig.api.download(try #require(doc["photo"]?.string))
        #expect(photo.sha256 == photoSHA)
        #expect(photo.headers.first { $0.0.lowercased() == "content-type" }?.1 == "image/jpeg")
        #expect(photo.headers.first { $0.0.lowercased() == "content-length" }?.1 == "300000")
        // Downloads need the token like everything else.
        #expect(try await rig.api.download(try #require(doc["photo"]?.string), token: .some(nil)).status == 401)
        // The local file keeps its references, untouched.
        #expect(try rig.docs.read("notes/a.json") == text)
        #expect(await eventually { (try? await rig.idle()) == true })
        let status = try await runDocsync(["status", rig.docs.path], logDirectory: rig.work.path)
        #expect(status.1.contains("pending: 0"))
        #expect(!status.1.contains("uploads:"), "\(status.1)")
    }

    @Test func changesUploadOnceRenamesAndRestartsUploadNothingIdenticalBytesAreStoredOnce() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let firstSHA = try rig.docs.writeRandom("notes/photo.jpg", size: 100_000, seed: 10)
        try rig.docs.write("notes/a.json", #"{"id":"a","docType":"note","photo":{"$file":"photo.jpg"}}"#)
        try rig.startAgent()
        #expect(await eventually { rig.sha(in: try? await rig.document("a")?["photo"]?.string) == firstSHA }, "\(rig.agent.stderr)")
        // The server logs an upload after the document holds it: wait for the line, not the document.
        #expect(await eventually { rig.uploadsReceived == 1 })

        // A new version of the file: uploaded once.
        let secondSHA = try rig.docs.writeRandom("notes/photo.jpg", size: 120_000, seed: 11)
        #expect(await eventually { rig.sha(in: try? await rig.document("a")?["photo"]?.string) == secondSHA })
        #expect(await eventually { (try? await rig.idle()) == true })
        #expect(await eventually { rig.uploadsReceived == 2 })

        // The document renamed: its index row follows, nothing is uploaded.
        try rig.docs.move("notes/a.json", "notes/renamed.json")
        let index = try Index(path: rig.docs.file(".docsync/index.sqlite"))
        #expect(await eventually { (try? await index.read { try $0.document(id: "a")?.path }) == "notes/renamed.json" })

        // Restarted: the rescan recognises the file by its stat; nothing is uploaded either.
        await rig.agent.stop()
        let agent = try rig.startAgent()
        #expect(await eventually { agent.stderr.contains("watching") })
        try rig.docs.write("notes/marker.json", #"{"id":"marker","docType":"note"}"#)
        #expect(await eventually { (try? await rig.document("marker")) != nil })
        #expect(await eventually { (try? await rig.idle()) == true })
        #expect(rig.uploadsReceived == 2, "\(agent.stderr)")

        // Another document attaching the same bytes: uploaded for its own property, stored once.
        try FileManager.default.copyItem(atPath: rig.docs.file("notes/photo.jpg"), toPath: rig.docs.file("notes/same.jpg"))
        try rig.docs.write("notes/b.json", #"{"id":"b","docType":"note","picture":{"$file":"same.jpg"}}"#)
        #expect(await eventually { rig.sha(in: try? await rig.document("b")?["picture"]?.string) == secondSHA })
        #expect(rig.storedBlobs().count == 2, "\(rig.storedBlobs())")  // the first and second photo, once each
        #expect(try await rig.document("a")?["photo"]?.string.flatMap { rig.sha(in: $0) } == secondSHA)

        // The attached file deleted: the property goes to null; restored: the URL comes back.
        try rig.docs.remove("notes/same.jpg")
        #expect(await eventually { (try? await rig.document("b"))?["picture"] == .null })
        #expect(try rig.docs.read("notes/b.json").contains(#"{"$file":"same.jpg"}"#))
        try FileManager.default.copyItem(atPath: rig.docs.file("notes/photo.jpg"), toPath: rig.docs.file("notes/same.jpg"))
        #expect(await eventually { rig.sha(in: try? await rig.document("b")?["picture"]?.string) == secondSHA })
        // The reference removed from the document: null on the server.
        try rig.docs.write("notes/b.json", #"{"id":"b","docType":"note"}"#)
        #expect(await eventually { (try? await rig.document("b"))?["picture"] == .null })
    }

    @Test func killNineDuringALargeUploadThenRestartStoresExactlyOneCopy() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let size = 256 << 20
        let sha = try rig.docs.writeRandom("big/huge.bin", size: size, seed: 20)
        try rig.docs.write("notes/h.json", #"{"id":"h","docType":"note","blob":{"$file":"../big/huge.bin"}}"#)
        let first = try rig.startAgent()
        // Killed while the server is receiving the file.
        let tmp = rig.work.file("server/uploads/tmp")
        let receiving = await eventually(timeout: .seconds(60), every: .milliseconds(5)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
            return names.contains { ((try? FileManager.default.attributesOfItem(atPath: tmp + "/" + $0)[.size] as? Int) ?? 0) > 0 }
        }
        #expect(receiving, "\(first.stderr)")
        first.signal(SIGKILL)
        _ = await first.wait()
        // The server drops the half-received file.
        #expect(await eventually { ((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? ["?"]).isEmpty })

        let second = try rig.startAgent()
        #expect(await eventually(timeout: .seconds(180)) { rig.sha(in: try? await rig.document("h")?["blob"]?.string) == sha }, "\(second.stderr)")
        #expect(rig.storedBlobs().count == 1, "\(rig.storedBlobs())")
        // Memory stayed flat while a file 2.5 times the limit moved through both processes (read
        // before the download below, which is the test's own traffic).
        let limit = 100 << 20
        let agentPeak = try peakRSS(of: second.pid), serverPeak = try peakRSS(of: rig.server.pid)
        #expect(agentPeak < limit, "agent peak RSS \(agentPeak >> 20) MiB")
        #expect(serverPeak < limit, "server peak RSS \(serverPeak >> 20) MiB")
        let download = try await rig.api.download(try #require(try await rig.document("h")?["blob"]?.string))
        #expect(download.sha256 == sha)
        #expect(download.length == Int64(size))
    }
}
}

/// The high-water mark of a process's resident memory (`VmHWM` in `/proc/<pid>/status`), bytes.
func peakRSS(of pid: Int32) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    else { throw ProcessFailure("no VmHWM for \(pid)") }
    return kib * 1024
}
