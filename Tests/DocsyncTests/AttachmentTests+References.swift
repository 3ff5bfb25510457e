import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// What a document's references may not be (missing, outside the folder, not a file, too large),
/// end to end: each is reported for its document, and nothing else stops.
extension LongSuites.AttachmentTests {
    /// Regression: a sparse 100 GB file referenced by one document was hashed whole before the
    /// server refused it anyway, holding every other document's push for minutes (257 s).
    @Test func aFileOverTheUploadLimitIsReportedUnreadAndHoldsNothingElse() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.docs.write("notes/huge.json", #"{"id":"huge","docType":"note","title":"sent","scan":{"$file":"huge.bin"}}"#)
        try rig.docs.writeSparse("notes/huge.bin", size: 100 << 30)
        for i in 0..<5 { try rig.docs.write("notes/n\(i).json", #"{"id":"n\#(i)","docType":"note"}"#) }
        try rig.startAgent()
        #expect(await eventually(timeout: .seconds(20)) {
            let docs = (try? await rig.api.documents(type: "note")) ?? [:]
            return (0..<5).allSatisfy { docs["n\($0)"] != nil } && docs["huge"]?["title"] == "sent"
        }, "every document goes out at once: \(rig.agent.stderr.suffix(1500))")
        #expect(try await rig.document("huge")?["scan"] == .null, "the file is not sent")
        let status = try await runDocsync(["status", rig.docs.path], logDirectory: rig.work.path)
        #expect(status.1.contains("huge.bin is 107374182400 bytes, over the 4294967296 a file may have to be sent (--max-upload-size)"), "\(status.1)")
    }

    /// Regression: a large file under the limit was hashed where saves are read, holding every
    /// document of its batch, and every save after them, until it was done (3 GiB: seconds). Files
    /// over 8 MiB are hashed in the background: the documents go at once, `status` says the file
    /// is being hashed, and its upload follows its hash.
    @Test func aLargeFileBeingHashedHoldsNoOtherDocumentAndIsUploadedOnceHashed() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.docs.write("notes/huge.json", #"{"id":"huge","docType":"note","title":"sent","scan":{"$file":"huge.bin"}}"#)
        try rig.docs.writeSparse("notes/huge.bin", size: 7 << 29)  // 3.5 GiB: seconds of hashing, no disk used
        let clipSHA = try rig.docs.writeRandom("notes/clip.bin", size: 12 << 20, seed: 31)
        try rig.docs.write("notes/clip.json", #"{"id":"clip","docType":"note","clip":{"$file":"clip.bin"}}"#)
        for i in 0..<5 { try rig.docs.write("notes/n\(i).json", #"{"id":"n\#(i)","docType":"note"}"#) }
        try rig.startAgent()
        #expect(await eventually(timeout: .seconds(20)) {
            let docs = (try? await rig.api.documents(type: "note")) ?? [:]
            return (0..<5).allSatisfy { docs["n\($0)"] != nil } && docs["huge"]?["title"] == "sent"
        }, "every document goes out at once: \(rig.agent.stderr.suffix(1500))")
        let status = try await runDocsync(["status", rig.docs.path], logDirectory: rig.work.path)
        #expect(status.1.contains("huge.bin: being hashed; uploaded once its hash is known"), "\(status.1)")
        #expect(await eventually(timeout: .seconds(30)) { rig.sha(in: try? await rig.document("clip")?["clip"]?.string) == clipSHA },
                "a file hashed in the background is uploaded: \(rig.agent.stderr.suffix(1500))")
    }

    /// `docsync sync` waits for the files its scan hashes in the background: it ends with them sent.
    @Test func syncSendsALargeFileHashedInTheBackgroundBeforeItEnds() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        let clipSHA = try rig.docs.writeRandom("notes/clip.bin", size: 12 << 20, seed: 32)
        try rig.docs.write("notes/clip.json", #"{"id":"clip","docType":"note","clip":{"$file":"clip.bin"}}"#)
        let (code, out, err) = try await runDocsync(
            ["sync", rig.docs.path, "--endpoint", rig.url, "--token-file", rig.work.file("token")], logDirectory: rig.work.path)
        #expect(code == 0, "\(out) \(err)")
        #expect(rig.sha(in: try await rig.document("clip")?["clip"]?.string) == clipSHA, "\(out) \(err)")
    }

    @Test func everyBadReferenceIsReportedForItsDocumentAndNothingElseStops() async throws {
        let rig = try await Rig()
        defer { Task { await rig.finish() } }
        try rig.docs.write("notes/sub/keep.txt", "a folder, not a file")
        try FileManager.default.createSymbolicLink(atPath: rig.docs.file("notes/escape.pdf"), withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: rig.docs.file("notes/loop.pdf"), withDestinationPath: rig.docs.file("notes/loop.pdf"))
        #expect(mkfifo(rig.docs.file("notes/pipe.pdf"), 0o644) == 0)
        try rig.docs.write("notes/bad.json", #"""
            {"id":"bad","docType":"note","title":"still synced",
             "missing":{"$file":"nope.pdf"},"outside":{"$file":"../../etc/passwd"},"absolute":{"$file":"/etc/passwd"},
             "link":{"$file":"escape.pdf"},"folder":{"$file":"sub"},"loop":{"$file":"loop.pdf"},"malformed":{"$file":42},
             "pipe":{"$file":"pipe.pdf"},"nul\u0000name":{"$file":"good.png"}}
            """#)
        let goodSHA = try rig.docs.writeRandom("notes/good.png", size: 1000, seed: 30)
        try rig.docs.write("notes/good.json", #"{"id":"good","docType":"note","image":{"$file":"good.png"}}"#)
        try rig.startAgent()

        #expect(await eventually { rig.sha(in: try? await rig.document("good")?["image"]?.string) == goodSHA }, "\(rig.agent.stderr)")
        #expect(await eventually { (try? await rig.document("bad"))?["title"] == "still synced" })
        let bad = try #require(try await rig.document("bad"))
        for property in ["missing", "outside", "absolute", "link", "folder", "loop", "malformed", "pipe", "nul\u{0}name"] {
            #expect(bad[property] == .null, "\(property) should be null on the server")
        }
        let reasons = [
            "missing": "nope.pdf does not exist", "outside": "../../etc/passwd leaves the synced folder",
            "absolute": "/etc/passwd is an absolute path", "link": "escape.pdf is a symlink pointing outside the synced folder",
            "folder": "sub is a folder, not a file", "loop": "loop.pdf cannot be read", "malformed": "a file reference is {\"$file\"",
            "pipe": "pipe.pdf is a named pipe (FIFO), not a file",
        ]
        let log = rig.agent.stderr.split(separator: "\n")
        for (property, reason) in reasons {
            #expect(log.contains { $0.contains("file.path=notes/bad.json") && $0.contains("property=\(property)") && $0.contains(reason) },
                    "no error for \(property)")
        }
        let status = try await runDocsync(["status", rig.docs.path], logDirectory: rig.work.path)
        for (_, reason) in reasons { #expect(status.1.contains(reason), "\(status.1)") }
        // Regression: a NUL in the property's name uploaded under the name cut at the NUL.
        #expect(status.1.contains(#"the property "nul\u{0}name" cannot carry a file: its name holds a control character"#), "\(status.1)")
        #expect(status.1.contains("notes/bad.json missing"))
        // The user's file is as they wrote it; the agent is still running and still syncing.
        #expect(try rig.docs.read("notes/bad.json").contains(#""missing":{"$file":"nope.pdf"}"#))
        #expect(rig.agent.isRunning)
        try rig.docs.writeRandom("notes/nope.pdf", size: 2000, seed: 31)
        #expect(await eventually { (try? await rig.document("bad"))?["missing"]?.string != nil })
    }
}
