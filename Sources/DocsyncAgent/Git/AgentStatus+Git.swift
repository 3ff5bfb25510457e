import DocsyncIndex
import DocsyncModel

/// The git history's part of `status` (`--git-commit`, `--git-branch`): the last commit made,
/// the pulled changes waiting for theirs, and why they wait.
public struct GitStatus: Sendable {
    /// Where commits go (`the checked-out branch`, `branch NAME`); `nil`: git is left alone.
    public var mode: String?
    public var lastCommit: String?
    public var lastCommitAt: Int64?
    public var waiting = 0
    public var held: String?
    /// Since when (Unix ms) commits are held.
    public var heldSince: Int64?

    static func read(_ tx: IndexTransaction) throws -> GitStatus {
        var status = GitStatus()
        status.mode = try tx.meta(.gitMode)
        if let last = try tx.meta(.gitLastCommit)?.split(separator: " ") {
            status.lastCommit = last.first.map(String.init)
            status.lastCommitAt = last.count > 1 ? Int64(last[1]) : nil
        }
        if let held = try tx.meta(.gitHeld)?.split(separator: "\t") {
            status.held = held.first.map(String.init)
            status.heldSince = held.count > 1 ? Int64(held[1]) : nil
        }
        status.waiting = try tx.gitChangeCount()
        return status
    }

    var isUsed: Bool { mode != nil || waiting > 0 || held != nil }

    /// One line for `status`, when git history is in use.
    func line(now: Int64) -> String? {
        guard isUsed else { return nil }
        var line = "git, commits onto \(mode ?? "nothing now"): " + (lastCommit.map { "last commit \($0.prefix(12))" + (lastCommitAt.map { " at \(Timestamp(unixMilliseconds: $0).rfc3339)" } ?? "") } ?? "no commit yet")
        if waiting > 0 { line += ", \(waiting) pulled changes waiting" }
        if let held { line += "; held back: \(held)" + (heldSince.map { " (for \(max(0, now - $0) / 1000) s)" } ?? "") }
        return line
    }

    var json: JSONValue {
        .object(JSONObject([
            (key: "mode", value: mode.map { .string($0) } ?? .null),
            (key: "last_commit", value: lastCommit.map { .string($0) } ?? .null),
            (key: "waiting", value: .number(String(waiting))),
            (key: "held", value: held.map { .string($0) } ?? .null),
        ]))
    }
}
