import ArgumentParser
import DocsyncAgent
import DocsyncClock
import DocsyncIndex
import DocsyncModel
import Foundation

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the index knows: synced, pending, invalid files and why, endpoint state.")

    @Argument(help: "The synced folder.")
    var directory: String

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "Keep showing it, refreshed in place (a JSON object a line with --json), until interrupted.")
    var watch = false

    @Option(help: "Seconds between refreshes with --watch.")
    var interval: Double = 1

    func validate() throws {
        guard (0.05...3600).contains(interval) else { throw ValidationError("--interval must be between 0.05 and 3600 seconds") }
    }

    func run() async throws {
        let root = absolutePath(directory)
        guard Index.exists(root: root) else {
            throw ValidationError("\(root) has no docsync index yet; run `docsync watch` or `docsync sync` on it first")
        }
        let terminal = isatty(STDOUT_FILENO) == 1
        repeat {
            let status = try await AgentStatus.read(root: root)
            let now = SystemClockSeam().wallNanoseconds() / 1_000_000
            let text = json ? JSONWriter.string(status.json(now: now)) : status.text(now: now)
            // On a terminal the screen is redrawn; elsewhere each refresh follows the last.
            emit(watch && terminal && !json ? "\u{1B}[H\u{1B}[2J" + text : text)
            if watch { try await Task.sleep(for: .milliseconds(Int64(interval * 1000))) }
        } while watch
    }
}
