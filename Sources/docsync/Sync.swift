import ArgumentParser
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
        let logger = bootstrapLogging(tuning.logLevel)
        var options = AgentOptions(root: absolutePath(directory), endpointURL: endpoint.endpoint, token: try endpoint.token(), tokenFile: endpoint.tokenFile)
        tuning.apply(to: &options)
        let client = makeHTTPClient()
        let report: SyncReport
        do {
            let agent = try Agent(options: options, client: client, logger: logger)
            report = try await agent.syncOnce()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
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
