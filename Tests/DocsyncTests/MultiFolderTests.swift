import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Several folders in one `docsync watch --config` (the real binary): made with `docsync init`,
/// each synced with its own endpoint, and each shown under its name in `status`, `/status` and
/// the metrics.
extension HeavySuites {
@Suite(.serialized) struct MultiFolderTests {
    @Test func twoFoldersInOneConfigSyncToTwoEndpointsAndShowSeparately() async throws {
        let (one, two) = (try await EndToEndTests.Setup.start(), try await EndToEndTests.Setup.start())
        let work = try TempFolder("multi")
        let config = work.file("config/docsync.yaml")
        for (name, setup) in [("alpha", one), ("beta", two)] {
            let (code, out, err) = try await runDocsync(
                ["init", work.file(name), "--endpoint", setup.url, "--config", config, "--token-file", setup.tokenFile], logDirectory: work.path)
            #expect(code == 0 && out.contains("docsync watch --config \(config)"), "\(out) \(err)")
        }
        // A flag given overrides the file: the file's listener address is not even read.
        let text = try String(contentsOfFile: config, encoding: .utf8)
        try text.replacingOccurrences(of: "# metrics_addr: 127.0.0.1:9464", with: "metrics_addr: not-an-address").write(toFile: config, atomically: true, encoding: .utf8)
        try work.write("alpha/notes/a1.json", #"{"docType":"note","n":1}"#)
        try work.write("alpha/notes/a2.json", #"{"docType":"note","n":2}"#)
        try work.write("beta/tasks/b1.json", #"{"docType":"task","n":1}"#)
        let agent = try DocsyncProcess(["watch", "--config", config, "--metrics-addr", "127.0.0.1:0"], logDirectory: work.path, name: "watch")
        defer { Task { await agent.stop(); await one.finish(); await two.finish(); work.remove() } }

        #expect(await eventually { (try? await one.api.documents(type: "note"))?.count == 2 }, "\(agent.stderr)")
        #expect(await eventually { (try? await two.api.documents(type: "task"))?.count == 1 })
        let (tasksOnOne, notesOnTwo) = (try await one.api.documents(type: "task"), try await two.api.documents(type: "note"))
        #expect(tasksOnOne.isEmpty && notesOnTwo.isEmpty, "each folder to its own endpoint")
        #expect(try await one.api.request("PUT", "/api/document", body: #"{"id":"from-one","docType":"memo"}"#).status == 200)
        #expect(await eventually { work.exists("alpha/memo/from-one.json") }, "pulled into the first folder")
        #expect(!work.exists("beta/memo/from-one.json"))

        let base = try #require(await MetricsTests().metricsBase(agent), "\(agent.stderr)")
        #expect(await eventually {
            let m = try? await MetricsTests().scrape(base + "/metrics")
            return m?.value("docsync_documents", ["folder": "alpha", "state": "synced"]) == 3
                && m?.value("docsync_documents", ["folder": "beta", "state": "synced"]) == 1
        })
        let metrics = try await MetricsTests().scrape(base + "/metrics")
        #expect(metrics.value("docsync_rescans_total", ["folder": "alpha", "reason": "start"]) == 1)
        #expect(metrics.value("docsync_rescans_total", ["folder": "beta", "reason": "start"]) == 1)
        #expect((metrics.value("docsync_inotify_watches", ["folder": "beta"]) ?? 0) >= 2, "beta's root and tasks/")

        let live = try #require(try await APIClient(baseURL: base, token: "").request("GET", "/status", token: .some(nil)).json?.object)
        let folders = try #require(live["folders"]?.elements?.compactMap { $0.object })
        #expect(folders.map { $0["name"]?.string } == ["alpha", "beta"])
        #expect(folders.map { $0["synced"] } == [3, 1])
        #expect(live["in_sync"] == .bool(true))

        let (code, out, err) = try await runDocsync(["status", "--config", config, "--json"], logDirectory: work.path)
        #expect(code == 0, "\(err)")
        let printed = try #require(try JSONParser.parse(out.trimmingCharacters(in: .whitespacesAndNewlines)).object?["folders"]?.elements?.compactMap { $0.object })
        #expect(printed.map { $0["name"]?.string } == ["alpha", "beta"] && printed.map { $0["synced"] } == [3, 1])
        let (_, plain, _) = try await runDocsync(["status", "--config", config], logDirectory: work.path)
        #expect(plain.contains("== alpha (\(work.file("alpha")))") && plain.contains("== beta (\(work.file("beta")))"), "\(plain)")
    }

    /// A config that cannot run stops `watch` before anything starts, naming the file and why.
    @Test func aConfigThatCannotRunIsRefusedWithTheReason() async throws {
        let work = try TempFolder("multi-bad")
        defer { work.remove() }
        try work.write("docsync.yaml", "folders:\n  - path: missing\n    endpoint: http://127.0.0.1:9\n")
        let (code, _, err) = try await runDocsync(["watch", "--config", work.file("docsync.yaml")], logDirectory: work.path)
        #expect(code != 0 && err.contains("\(work.file("docsync.yaml")): folder \"missing\": \(work.file("missing")) is not a folder"), "\(err)")
        try FileManager.default.createDirectory(atPath: work.file("missing"), withIntermediateDirectories: true)
        let (again, _, noToken) = try await runDocsync(["watch", "--config", work.file("docsync.yaml")], environment: ["DOCSYNC_TOKEN": ""], logDirectory: work.path)
        #expect(again != 0 && noToken.contains("folder \"missing\": no token"), "\(noToken)")
        let (both, _, mixed) = try await runDocsync(["watch", work.path, "--config", work.file("docsync.yaml")], logDirectory: work.path)
        #expect(both != 0 && mixed.contains("with --config the folders"), "\(mixed)")
        // init never leaves a config it could not read back: here `folders:` is not the last key.
        try work.write("odd.yaml", "folders:\n  - {path: /x, endpoint: http://h}\nlog_level: info\n")
        let before = try work.read("odd.yaml")
        let (refused, _, why) = try await runDocsync(
            ["init", work.file("new"), "--endpoint", "http://127.0.0.1:9", "--config", work.file("odd.yaml")], logDirectory: work.path)
        #expect(refused != 0 && why.contains("is left as it was") && why.contains("by hand"), "\(why)")
        #expect(try work.read("odd.yaml") == before)
    }

    /// Trust finding (fourth round, 3): a folder of a config that is gone refused the whole config
    /// at a restart, so systemd restarts failed for every other folder. A folder missing at start
    /// is said and left out; one deleted while running stops alone; SIGTERM still ends the rest.
    @Test func aFolderGoneAtStartOrWhileRunningIsSaidAndTheOthersRun() async throws {
        let setup = try await EndToEndTests.Setup.start()
        let work = try TempFolder("multi-gone")
        let config = work.file("docsync.yaml")
        for name in ["alpha", "beta", "gamma"] {
            let (code, out, err) = try await runDocsync(
                ["init", work.file(name), "--endpoint", setup.url, "--config", config, "--token-file", setup.tokenFile], logDirectory: work.path)
            #expect(code == 0, "\(out) \(err)")
        }
        try work.write("beta/notes/b1.json", #"{"id": "b1", "docType": "note"}"#)
        try FileManager.default.removeItem(atPath: work.file("gamma"))
        let agent = try DocsyncProcess(["watch", "--config", config], logDirectory: work.path, name: "watch")
        defer { Task { await agent.stop(); await setup.finish(); work.remove() } }
        #expect(await eventually { agent.stderr.contains("folder \"gamma\": \(work.file("gamma")) is not a folder") && agent.stderr.contains("the other folders go on") })
        #expect(await eventually { (try? await setup.api.documents(type: "note"))?["b1"] != nil }, "\(agent.stderr)")

        let rm = Process()
        rm.executableURL = URL(fileURLWithPath: "/bin/rm")
        rm.arguments = ["-rf", work.file("beta")]
        try rm.run()
        rm.waitUntilExit()
        #expect(await eventually { agent.stderr.contains("this folder stopped") }, "\(agent.stderr)")
        try work.write("alpha/notes/a1.json", #"{"id": "a1", "docType": "note"}"#)
        #expect(await eventually { (try? await setup.api.documents(type: "note"))?["a1"] != nil }, "\(agent.stderr)")
        let b1 = try await setup.api.documents(type: "note")["b1"]
        #expect(b1?["deleted_at"] == nil || b1?["deleted_at"] == .null, "beta's deletion reached the server")
        #expect(agent.isRunning)
        agent.signal(SIGTERM)
        #expect(await agent.wait(timeout: .seconds(5)) != nil)
    }
}
}
