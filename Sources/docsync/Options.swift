import ArgumentParser
import DocsyncAgent
import DocsyncHTTP
import Foundation
import Logging

/// Where the agent's endpoint is and how to authenticate to it.
struct EndpointOptions: ParsableArguments {
    @Option(help: "The endpoint: http(s)://HOST:PORT (PingPong routes, the reference endpoint) or syncrails+http(s)://HOST:PORT/api/sync?resource=events.")
    var endpoint: String

    @Option(help: "A file whose first line is the token (else the DOCSYNC_TOKEN environment variable).")
    var tokenFile: String?

    @Option(help: "PEM certificates to trust for an https:// endpoint, instead of the system's (a self-signed server).")
    var caFile: String?

    func validate() throws {
        _ = try EndpointChoice(url: endpoint)
    }

    func token() throws -> String {
        try resolveToken(file: tokenFile)
    }
}

func resolveToken(file: String?) throws -> String {
    if let file {
        do {
            return try readToken(file: file)
        } catch {
            throw ValidationError("cannot read the token from \(file): \(error)")
        }
    }
    if let env = ProcessInfo.processInfo.environment["DOCSYNC_TOKEN"], !env.isEmpty { return env }
    throw ValidationError("no token: pass --token-file FILE or set DOCSYNC_TOKEN")
}

/// Where the reference endpoint listens (`serve` and `up`).
struct ListenOptions: ParsableArguments {
    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8080
}

/// Logging and limits shared by the commands that run the agent.
struct AgentTuning: ParsableArguments {
    @Option(help: "Largest document file synced, in bytes.")
    var maxFileSize: Int = 16 << 20

    @Option(help: "Seconds one request to the endpoint may take before it is retried.")
    var requestTimeout: Double = 30

    @Option(help: "Seconds between pulls from an endpoint without a long poll (sync-rails).")
    var pollInterval: Double = 10

    @Option(help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log lines as text (under systemd: without timestamps, with priorities) or json.")
    var logFormat: LogFormat = .text

    func validate() throws {
        guard maxFileSize > 0 else { throw ValidationError("--max-file-size must be positive") }
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be positive") }
        guard (0.1...86_400).contains(pollInterval) else { throw ValidationError("--poll-interval must be between 0.1 and 86400 seconds") }
    }

    func apply(to options: inout AgentOptions) {
        options.maxFileSize = maxFileSize
        options.requestTimeout = .milliseconds(Int64(requestTimeout * 1000))
        options.pollInterval = .milliseconds(Int64(pollInterval * 1000))
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Sets up swift-log once per process: lines on stderr (see ``LineLogHandler``), stdout kept for
/// output.
func bootstrapLogging(_ level: Logger.Level, format: LogFormat = .text) -> Logger {
    let journal = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil
    LoggingSystem.bootstrap { _ in LineLogHandler(logLevel: level, format: format, journal: journal) }
    var logger = Logger(label: "docsync")
    logger.logLevel = level
    return logger
}

/// The folder argument, made absolute.
func absolutePath(_ path: String) -> String {
    let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
    return url.standardizedFileURL.path
}

/// Writes a line to stdout and flushes it: scripts and tests read it as it happens.
func emit(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(STDOUT_FILENO, $0.baseAddress! + written, $0.count - written) }
        if n <= 0 { return }
        written += n
    }
}

/// Runs `body` with an agent for `directory` and an HTTP client that is shut down afterwards,
/// whatever `body` does: what `watch` and `sync` share.
func withAgent<T>(
    directory: String, endpoint: EndpointOptions, tuning: AgentTuning, logger: Logger, onWatching: (@Sendable () -> Void)? = nil,
    _ body: (Agent) async throws -> T
) async throws -> T {
    var options = AgentOptions(root: absolutePath(directory), endpointURL: endpoint.endpoint, token: try endpoint.token(), tokenFile: endpoint.tokenFile)
    tuning.apply(to: &options)
    options.onWatching = onWatching
    let client = try makeHTTPClient(caFile: endpoint.caFile.map(absolutePath))
    let result: T
    do {
        let makeEndpoint = try EndpointChoice(url: endpoint.endpoint).factory(client: client)
        result = try await body(try Agent(options: options, endpoint: makeEndpoint, logger: logger))
    } catch {
        try? await client.shutdown()
        throw error
    }
    try await client.shutdown()
    return result
}
