import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// `docsync doctor` as a user runs it when sync misbehaves.
extension HeavySuites {
@Suite(.serialized) struct DoctorTests {
    func checks(_ out: String) throws -> [String: JSONObject] {
        let object = try #require(try JSONParser.parse(out.trimmingCharacters(in: .whitespacesAndNewlines)).object)
        var byName: [String: JSONObject] = [:]
        if case .array(let list)? = object["checks"] {
            for case .object(let check) in list { byName[check["check"]?.string ?? ""] = check }
        }
        return byName
    }

    @Test func aWatchLimitBelowTheTreesFoldersAndAnUnreachableEndpointAreReportedWithWhatToDo() async throws {
        let work = try TempFolder("doctor")
        defer { work.remove() }
        for i in 0..<30 { try work.write("tree/f\(i)/d.json", #"{"docType":"note"}"#) }
        try work.write("token", "t\n")
        let (code, out, err) = try await runDocsync(
            ["doctor", work.file("tree"), "--endpoint", "http://127.0.0.1:1", "--token-file", work.file("token"), "--watch-limit", "10", "--json"],
            logDirectory: work.path)
        #expect(code == 1, "\(out)\(err)")
        let found = try checks(out)
        #expect(found["inotify watches"]?["status"] == "fail")
        #expect(found["inotify watches"]?["detail"]?.string == "the tree has 31 folders; fs.inotify.max_user_watches is 10")
        #expect(found["inotify watches"]?["advice"]?.string?.contains("sudo sysctl fs.inotify.max_user_watches=") == true)
        // The instances: one for `watch`, however many folders; the detail names the limit.
        let limit = try #require(try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_instances", encoding: .utf8))
        let instances = try #require(found["inotify instances"]?["detail"]?.string)
        #expect(instances.contains("of fs.inotify.max_user_instances \(limit.trimmingCharacters(in: .whitespacesAndNewlines)) in use"), "\(instances)")
        #expect(found["endpoint"]?["status"] == "fail")
        #expect(found["endpoint"]?["detail"]?.string?.contains("127.0.0.1:1") == true, "\(String(describing: found["endpoint"]))")
        #expect(found["files"]?["status"] == "ok" && found["disk"]?["status"] != nil && found["index"]?["status"] == "ok")

        // The same as text, for a person.
        let (_, text, _) = try await runDocsync(
            ["doctor", work.file("tree"), "--endpoint", "http://127.0.0.1:1", "--token-file", work.file("token"), "--watch-limit", "10"],
            logDirectory: work.path)
        #expect(text.contains("FAIL inotify watches: the tree has 31 folders") && text.contains("→ sudo sysctl"), "\(text)")
    }

    @Test func aHealthyFolderPassesAndAWrongTokenIsNamed() async throws {
        let s = try await EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        try s.docs.write("notes/a.json", #"{"docType":"note"}"#)
        let (synced, _, syncErr) = try await runDocsync(["sync", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile], logDirectory: s.work.path)
        #expect(synced == 0, "\(syncErr)")
        let (code, out, err) = try await runDocsync(
            ["doctor", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile, "--json"], logDirectory: s.work.path)
        #expect(code == 0, "\(out)\(err)")
        let found = try checks(out)
        #expect(found["endpoint"]?["status"] == "ok" && found["index"]?["detail"] == "quick_check ok")
        #expect(found["clock"]?["status"] == "ok" && found["clock"]?["detail"]?.string?.contains("sync-headers") == true, "\(String(describing: found["clock"]))")

        try s.work.write("wrong", "not-the-token\n")
        let (refused, wrongOut, _) = try await runDocsync(
            ["doctor", s.docs.path, "--endpoint", s.url, "--token-file", s.work.file("wrong"), "--json"], logDirectory: s.work.path)
        #expect(refused == 1)
        #expect(try checks(wrongOut)["endpoint"]?["detail"]?.string?.contains("refuses the credential") == true)
    }
}
}
