import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Prometheus's text format, as a scraper reads it: `name{label="value",…} number` lines.
struct Scrape {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    let samples: [Sample]

    init(_ text: String) {
        samples = text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
            return Sample(name: String(series[..<brace]), labels: Self.labels(series[series.index(after: brace)...].dropLast()), value: value)
        }
    }

    /// `a="x",b="y"`: values may hold any character but an unescaped quote.
    static func labels(_ text: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var rest = text[...]
        while let equals = rest.firstIndex(of: "=") {
            let key = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            var value = ""
            var i = rest.index(equals, offsetBy: 2)  // past `="`
            while i < rest.endIndex, rest[i] != "\"" {
                if rest[i] == "\\" { i = rest.index(after: i) }
                if i < rest.endIndex { value.append(rest[i]) }
                i = rest.index(after: i)
            }
            out[key] = value
            rest = i < rest.endIndex ? rest[rest.index(after: i)...] : ""
        }
        return out
    }

    /// The sum of the samples named `name` whose labels include `labels` (`nil`: none).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in sample.name == name && labels.allSatisfy { k, v in sample.labels[k] == v } }
        return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
    }
}

/// What a scraper sees of the real binary: the agent's `/metrics` and `/status`
/// (`watch --metrics-addr`) and the server's `/metrics`, as documents are created, fail and sync.
extension HeavySuites {
@Suite(.serialized) struct MetricsTests {
    func scrape(_ url: String, token: String?? = .some(nil)) async throws -> Scrape {
        let reply = try await APIClient(baseURL: url, token: "").request("GET", "", token: token)
        #expect(reply.status == 200, "\(url): \(reply.status)")
        #expect(reply.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        return Scrape(reply.text)
    }

    /// The agent's metrics address, from the line it logs once it listens.
    func metricsBase(_ agent: DocsyncProcess) async -> String? {
        var base: String?
        _ = await eventually {
            guard let start = agent.stderr.range(of: "status page at http://") else { return false }
            let rest = agent.stderr[start.upperBound...]
            guard let end = rest.range(of: "/,") else { return false }
            base = "http://" + rest[..<end.lowerBound]
            return true
        }
        return base
    }

    /// Trust finding (fourth round, 12): the listener answered any `Host`, so a page whose name
    /// was rebound to 127.0.0.1 read `/status`, which names the folder. Loopback names and the
    /// configured address only.
    @Test func theListenerAnswersToItsOwnAddressAndLocalhostOnly() async throws {
        let s = try await EndToEndTests.Setup.start()
        let agent = try DocsyncProcess(
            ["watch", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile, "--metrics-addr", "127.0.0.1:0"],
            logDirectory: s.work.path, name: "watch")
        defer { Task { await agent.stop(); await s.finish() } }
        let base = try #require(await metricsBase(agent), "\(agent.stderr)")
        let port = base.split(separator: ":").last.map(String.init) ?? ""
        let api = APIClient(baseURL: base, token: "")
        for host in ["evil.example", "evil.example:\(port)", "192.168.1.7:\(port)", ""] {
            let reply = try await api.request("GET", "/status", token: .some(nil), headers: [("Host", host)])
            #expect(reply.status == 421 && !reply.text.contains(s.docs.path), "Host \(host): \(reply.status)")
        }
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)"] {
            #expect(try await api.request("GET", "/status", token: .some(nil), headers: [("Host", host)]).status == 200, "Host \(host)")
        }
    }

    @Test func metricsFollowDocumentsAsTheyAreCreatedFailAndSync() async throws {
        let s = try await EndToEndTests.Setup.start()
        let agent = try DocsyncProcess(
            ["watch", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile, "--metrics-addr", "127.0.0.1:0"],
            logDirectory: s.work.path, name: "watch")
        defer { Task { await agent.stop(); await s.finish() } }
        let found = await metricsBase(agent)
        let base = try #require(found, "\(agent.stderr)")
        for i in 0..<5 { try s.docs.write("notes/n\(i).json", #"{"docType":"note","n":\#(i)}"#) }

        #expect(await eventually { (try? await scrape(base + "/metrics"))?.value("docsync_documents", ["state": "synced"]) == 5 })
        let folderName = String(s.docs.path.split(separator: "/").last ?? "")
        #expect((try await scrape(base + "/metrics")).value("docsync_documents", ["state": "synced", "folder": folderName]) == 5, "the folder label")
        let synced = try await scrape(base + "/metrics")
        #expect((synced.value("docsync_pushed_documents_total", ["outcome": "stored"]) ?? 0) >= 5)
        #expect((synced.value("docsync_endpoint_call_duration_seconds_count", ["call": "push"]) ?? 0) >= 1)
        #expect(synced.value("docsync_rescans_total", ["reason": "start"]) == 1)
        #expect((synced.value("docsync_inotify_watches") ?? 0) >= 2, "the root and notes/")
        #expect((synced.value("docsync_inotify_watches_limit") ?? 0) > 0)
        #expect(synced.value("docsync_outbox_entries") == 0)
        let bound = try #require(synced.value("docsync_clock_bound_seconds"))
        #expect(bound > 0 && bound < 0.1, "calibrated on loopback: \(bound) s")

        // A broken file: counted as invalid, and /status says why.
        try s.docs.write("notes/broken.json", "{not json")
        #expect(await eventually { (try? await scrape(base + "/metrics"))?.value("docsync_documents", ["state": "invalid"]) == 1 })
        let live = try #require(try await APIClient(baseURL: base, token: "").request("GET", "/status", token: .some(nil)).json?.object)
        let status = try #require(live["folders"]?.elements?.first?.object)
        #expect(status["invalid"] == 1 && status["name"]?.string == s.docs.path.split(separator: "/").last.map(String.init))
        #expect(live["in_sync"] == .bool(false))
        #expect(JSONWriter.string(status["invalid_files"] ?? .null).contains("notes/broken.json"), "\(status)")

        // The server's own metrics, behind its token.
        let reply = try await s.api.request("GET", "/metrics")
        #expect(reply.status == 200 && reply.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let served = Scrape(reply.text)
        #expect(served.value("docsync_server_documents", ["state": "live"]) == 5)
        #expect((served.value("docsync_server_request_duration_seconds_count", ["method": "POST", "code": "200"]) ?? 0) >= 1)
        #expect(try await APIClient(baseURL: s.url, token: "").request("GET", "/metrics", token: .some(nil)).status == 401, "not without the token")

        // The server gone: a new change waits in the outbox, its pushes retried.
        await s.server.stop()
        try s.docs.write("notes/late.json", #"{"docType":"note","late":true}"#)
        #expect(await eventually {
            let m = try? await scrape(base + "/metrics")
            return m?.value("docsync_documents", ["state": "pending"]) == 1 && (m?.value("docsync_outbox_entries") ?? 0) >= 1
                && (m?.value("docsync_pushed_documents_total", ["outcome": "retried"]) ?? 0) >= 1
        })
    }
}
}
