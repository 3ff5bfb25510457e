import ArgumentParser
import DocsyncAgent
import DocsyncClock
import DocsyncIndex
import DocsyncModel

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the index knows: synced, pending, invalid files and why, endpoint state.")

    @Argument(help: "The synced folder.")
    var directory: String

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        let root = absolutePath(directory)
        guard Index.exists(root: root) else {
            throw ValidationError("\(root) has no docsync index yet; run `docsync watch` or `docsync sync` on it first")
        }
        let status = try await AgentStatus.read(root: root)
        let now = SystemClockSeam().wallNanoseconds() / 1_000_000
        emit(json ? JSONWriter.string(status.json(now: now)) : status.text(now: now))
    }
}
