import DocsyncAgent
import DocsyncClock
import DocsyncIndex
import DocsyncModel
@testable import DocsyncRuntime
import DocsyncTestSupport
import Foundation
import Testing

/// What a running agent shows beyond the engine, reached without a process: the status
/// listener's guard against rebound names and its address, `/status`'s folder object, the
/// progress line.
@Suite struct RuntimeTests {
    /// A page that rebinds its own name to 127.0.0.1 must not read `/status`: only loopback names
    /// and the listener's own address pass, with any port; whatever else a `Host` says is refused.
    @Test func theListenerAnswersOnlyToLoopbackNamesAndItsOwnAddress() {
        for host in ["localhost", "LOCALHOST:9464", "127.0.0.1:9464", "[::1]:9464", "[::1]", "app.localhost", "10.0.0.5:9464"] {
            #expect(MetricsListener.isAllowed(host: host, listening: "10.0.0.5"), "\(host)")
        }
        let refused = [nil, "", "evil.example", "evil.example:9464", "127.0.0.1.evil.example", "localhost.evil.example",
                       "[::1", "[evil.example]", String(repeating: "a.", count: 200) + "localhost", "10.0.0.6:9464"]
        for host in refused {
            #expect(!MetricsListener.isAllowed(host: host, listening: "10.0.0.5"), "\(host ?? "nil")")
        }
    }

    /// `--metrics-addr` is HOST:PORT; anything else is refused naming what was given, before
    /// any folder starts.
    @Test func aMetricsAddressIsHostColonPortOrRefusedPlainly() throws {
        #expect(try MetricsListener.parse("127.0.0.1:9464") == ("127.0.0.1", 9464))
        #expect(try MetricsListener.parse("[::1]:0") == ("::1", 0))
        for bad in ["", ":", ":9464", "localhost", "localhost:", "localhost:65536", "localhost:-1", "localhost:99999999999999999999", "a:b"] {
            #expect(throws: MetricsAddressError.self, "\(bad)") { try MetricsListener.parse(bad) }
        }
        let error = MetricsAddressError(address: "x\ny")
        #expect(error.description.contains("HOST:PORT") && !error.description.contains("\n"), "the address given is shown escaped")
    }

    /// `/status`'s object for one folder: the index's counts, the folder's name and path, and a
    /// conflict copy left in the tree, which keeps the folder from being called in sync.
    @Test func aFoldersLiveStatusNamesItsConflictCopiesAndIsNotInSyncWithOne() async throws {
        let folder = try TempFolder("live-status")
        defer { folder.remove() }
        let index = try Index.inMemory()
        let live = LiveStatus(name: "notes", root: folder.path, clock: ServerClock(), metrics: AgentMetrics(folder: "notes"), index: index)
        let clean = try #require(try await live.json().object)
        #expect(clean["name"] == .string("notes") && clean["folder"] == .string(folder.path))
        #expect(clean["in_sync"] == .bool(true), "\(clean)")

        try folder.write("note/a.sync-conflict-20260101-000000.json", "{}")
        let withCopy = LiveStatus(name: "notes", root: folder.path, clock: ServerClock(), metrics: AgentMetrics(folder: "notes"), index: index)
        let object = try #require(try await withCopy.json().object)
        #expect(object["in_sync"] == .bool(false))
        guard case .array(let copies) = object["conflicts"] else { Issue.record("no conflicts in \(object)"); return }
        #expect(copies.compactMap { $0.object?["document"]?.string } == ["note/a.json"], "\(object)")
    }

    /// The progress line: files recorded and changes delivered per second since the work began,
    /// and an ETA from the rate of delivery.
    @Test func theProgressLineGivesRatesAndAnETA() throws {
        let ticker = ProgressTicker(index: try Index.inMemory(), environment: [:])
        let start = ContinuousClock.now
        let line = ticker.line(
            ProgressTicker.Sample(files: 3_000, pending: 500, at: start + .seconds(10)),
            since: ProgressTicker.Sample(files: 1_000, pending: 1_000, at: start), peak: 1_500)
        #expect(line == "progress: 3000 files in the index (+200/s), 500 pending (−100/s, ETA 5 s)", "\(line)")
        let idle = ticker.line(
            ProgressTicker.Sample(files: 10, pending: 7, at: start + .seconds(10)), since: ProgressTicker.Sample(files: 10, pending: 7, at: start), peak: 7)
        #expect(idle == "progress: 10 files in the index, 7 pending", "no rate while nothing moves")
    }
}
