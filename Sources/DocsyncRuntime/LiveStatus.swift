import DocsyncAgent
import DocsyncClock
import DocsyncIndex
import DocsyncFiles
import DocsyncModel
import Foundation
import Synchronization

/// One folder's part of what `/status` answers while the agent runs: `status --json`'s object,
/// plus the folder's name and path, whether it is in sync, the conflict copies to resolve, and the
/// files changed last. Its metrics are refreshed from the same index at each scrape.
public final class LiveStatus: Sendable {
    public let name: String
    public let root: String
    let clock: ServerClock
    let metrics: AgentMetrics
    /// Conflict copies are found by walking the tree: at most every `conflictsEvery`, not each poll.
    private let conflicts = Mutex<(at: ContinuousClock.Instant, copies: [String])?>(nil)
    static let conflictsEvery: Duration = .seconds(5)

    /// The agent's own index (no pool of its own).
    public let index: Index

    public init(name: String, root: String, clock: ServerClock, metrics: AgentMetrics, index: Index) {
        self.name = name
        self.root = root
        self.clock = clock
        self.metrics = metrics
        self.index = index
    }

    func json() async throws -> JSONValue {
        let status = try await AgentStatus.read(index)
        let recent = try await index.read { try $0.recentFiles(limit: 10) }
        guard case .object(var object) = status.json(now: SystemClockSeam().wallNanoseconds() / 1_000_000) else { return .null }
        let copies = conflictCopies()
        object["name"] = .string(name)
        object["folder"] = .string(root)
        object["in_sync"] = .bool(status.inSync(conflictCopies: copies.count))
        object["conflicts"] = .array(copies.map { copy in
            .object(JSONObject([(key: "copy", value: .string(copy)), (key: "document", value: .string(ConflictCopy.documentPath(of: copy) ?? ""))]))
        })
        object["recent"] = .array(recent.map { file in
            .object(JSONObject([
                (key: "path", value: .string(file.path)),
                (key: "time", value: .string(Timestamp(unixMilliseconds: file.mtimeNs / 1_000_000).rfc3339)),
            ]))
        })
        return .object(object)
    }

    private func conflictCopies() -> [String] {
        if let cached = conflicts.withLock({ $0 }), ContinuousClock.now - cached.at < Self.conflictsEvery { return cached.copies }
        let copies = ConflictCopy.all(in: root)
        conflicts.withLock { $0 = (ContinuousClock.now, copies) }
        return copies
    }
}
