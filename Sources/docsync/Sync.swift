import ArgumentParser
import DocsyncRuntime
import DocsyncAgent

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reconcile the folder with the endpoint once and exit.",
        discussion: "Exits 0 only when every valid document is on the server; otherwise non-zero with a summary, leaving the rest queued for the next run.")

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var tuning: AgentTuning

    func run() async throws {
        let (level, format) = try tuning.logging()
        let logger = bootstrapLogging(level, format: format)
        let report = try await withAgent(directory: directory, endpoint: endpoint, tuning: tuning, logger: logger) { agent in
            let progress = Task { await ProgressTicker(index: agent.index).run() }
            defer { progress.cancel() }
            return try await agent.syncOnce()
        }
        let s = report.scan
        emit("scanned: \(s.read) read, \(s.unchanged) unchanged, \(s.queued) changed, \(s.moved) moved, \(s.deleted) deleted, \(s.invalid) invalid")
        if report.invalid > 0 { emit("invalid files: \(report.invalid) (see `docsync status`)") }
        if report.complete {
            emit("in sync")
            return
        }
        if let failure = report.failure { emit("not in sync: \(failure)") }
        emit("pending: \(report.pending), rejected: \(report.rejected); queued changes are kept for the next run")
        throw ExitCode(2)
    }
}
