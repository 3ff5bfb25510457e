import DocsyncModel
import Foundation

/// Many agents against one or a few servers: one `docsync watch` with a folder per agent, the
/// folders spread over the servers in turn, every folder following every document. Each folder
/// creates its documents, then edits each of them once; the run waits until every folder holds
/// every document, then every edit.
///
/// The agents share one process (and its HTTP connections); to a server they are as many agents:
/// one long poll, one cursor and one outbox each.
public struct AgentsLoad: Sendable {
    public struct Outcome: Sendable {
        public var agents = 0
        public var documents = 0
        /// From the start until every folder holds every document.
        public var importSeconds = Double.nan
        /// From the first edit until every folder holds every edit.
        public var editSeconds = Double.nan
        public var converged = false
        /// Every document is at revision 2 on the server: one for its create, one for its edit.
        public var revisionsExact = false
        /// The highest revision the server holds.
        public var highestRevision: Int64 = 0
        /// The server's change counter once every folder held every document: `documents` when
        /// nothing was stored twice.
        public var changesAfterImport: Int64 = 0
        /// The server's change counter at the end: twice `documents` when nothing was stored twice.
        public var serverChanges: Int64 = 0
        /// The agents' log lines that name a timeout.
        public var timeouts: [String] = []

        public init() {}
    }

    public let urls: [String]
    public let tokenFile: String
    public let agents: Int
    public let documentsEach: Int
    public static let docType = "load"

    public init(urls: [String], tokenFile: String, agents: Int, documentsEach: Int) {
        (self.urls, self.tokenFile, self.agents, self.documentsEach) = (urls, tokenFile, agents, documentsEach)
    }

    public func run(in work: TempFolder, token: String, timeout: Duration = .seconds(300)) async throws -> Outcome {
        var outcome = Outcome()
        (outcome.agents, outcome.documents) = (agents, agents * documentsEach)
        try writeFolders(in: work)
        let start = ContinuousClock.now
        let watch = try DocsyncProcess(["watch", "--config", work.file("agents.yaml")], logDirectory: work.path, name: "agents")
        let total = outcome.documents
        outcome.converged = await eventually(timeout: timeout, every: .seconds(1)) { allFolders(in: work) { $0.count == total } }
        outcome.importSeconds = Self.seconds(since: start)
        outcome.changesAfterImport = try await changes(token: token)
        if outcome.converged {
            let edited = ContinuousClock.now
            try editOwnDocuments(in: work)
            outcome.converged = await eventually(timeout: timeout, every: .seconds(1)) { allFolders(in: work) { $0.edited == total } }
            outcome.editSeconds = Self.seconds(since: edited)
        }
        await watch.stop()
        outcome.timeouts = watch.stderr.split(separator: "\n").filter { $0.lowercased().contains("timed out") || $0.lowercased().contains("timeout") }.map(String.init)
        try await readServer(token: token, into: &outcome)
        return outcome
    }

    /// Each folder's own documents and the config that names every folder.
    private func writeFolders(in work: TempFolder) throws {
        var config = "log_level: warning\nfolders:\n"
        for a in 0..<agents {
            for i in 0..<documentsEach {
                try work.write("a\(a)/mine/d\(i).json", #"{"docType":"\#(Self.docType)","agent":\#(a),"n":\#(i),"v":1}"#)
            }
            config += "  - {name: a\(a), path: \(work.file("a\(a)")), endpoint: \"\(urls[a % urls.count])\", token_file: \(tokenFile)}\n"
        }
        try work.write("agents.yaml", config)
    }

    /// Rewrites every folder's own documents with `v` 2, keeping the id the agent wrote into each.
    private func editOwnDocuments(in work: TempFolder) throws {
        for a in 0..<agents {
            for i in 0..<documentsEach {
                let path = work.file("a\(a)/mine/d\(i).json")
                guard var object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any] else {
                    throw ProcessFailure("\(path) is not an object")
                }
                object["v"] = 2
                try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path), options: .atomic)
            }
        }
    }

    /// What one folder holds of the load's documents: how many, and how many carry the edit.
    struct Holding { var count = 0, edited = 0 }

    private func allFolders(in work: TempFolder, _ done: (Holding) -> Bool) -> Bool {
        (0..<agents).allSatisfy { done(Self.holding(work.file("a\($0)"))) }
    }

    static func holding(_ root: String) -> Holding {
        var holding = Holding()
        guard let walker = FileManager.default.enumerator(atPath: root) else { return holding }
        while let relative = walker.nextObject() as? String {
            if relative.hasPrefix(".docsync") { walker.skipDescendants(); continue }
            guard relative.hasSuffix(".json"), let data = FileManager.default.contents(atPath: root + "/" + relative),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], object["docType"] as? String == docType
            else { continue }
            holding.count += 1
            if (object["v"] as? Int) == 2 { holding.edited += 1 }
        }
        return holding
    }

    private func readServer(token: String, into outcome: inout Outcome) async throws {
        let api = APIClient(baseURL: urls[0], token: token)
        let documents = try await api.documents(type: Self.docType)
        let revisions = documents.values.map { object -> Int64 in
            if case .number(let rev)? = object[DocumentRules.revKey] { return Int64(rev) ?? -1 }
            return -1
        }
        outcome.highestRevision = revisions.max() ?? 0
        outcome.revisionsExact = documents.count == outcome.documents && revisions.allSatisfy { $0 == 2 }
        outcome.serverChanges = try await changes(token: token)
    }

    private func changes(token: String) async throws -> Int64 {
        let stats = try await APIClient(baseURL: urls[0], token: token).request("GET", "/api/stats").json?.object?["data"]?.object
        guard case .number(let seq)? = stats?["seq"] else { return -1 }
        return Int64(seq) ?? -1
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
