import ArgumentParser
import DocsyncAgent
import DocsyncHTTP
import DocsyncModel
import Foundation
import Logging

/// Where the agent's endpoint is and how to authenticate to it.
struct EndpointOptions: ParsableArguments {
    // Also `watch`'s, whose endpoint is optional (it may come from a config file).
    static let endpointHelp: ArgumentHelp = """
        The endpoint: http(s)://HOST:PORT (PingPong routes, the reference endpoint), kinto+http(s)://HOST:PORT/v1/buckets/NAME \
        or syncrails+http(s)://HOST:PORT/api/sync?resource=events.
        """
    static let tokenFileHelp: ArgumentHelp = "A file whose first line is the token (else the DOCSYNC_TOKEN environment variable)."
    static let caFileHelp: ArgumentHelp = "PEM certificates to trust for an https:// endpoint, instead of the system's (a self-signed server)."

    @Option(help: endpointHelp)
    var endpoint: String

    @Option(help: tokenFileHelp)
    var tokenFile: String?

    @Option(help: caFileHelp)
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

/// Logging and limits shared by the commands that run the agent. Each is optional so that, with
/// `watch --config`, a flag given overrides the file and a flag not given leaves it.
struct AgentTuning: ParsableArguments {
    @Option(help: "Largest document file synced, in bytes (default: 16 MiB).")
    var maxFileSize: Int?

    @Option(
        help: "Largest file others attached that is downloaded into the folder, in bytes (K, M, G suffixes allowed; default: 4G). Larger ones are reported, not fetched.",
        transform: parseByteCount)
    var maxDownloadSize: Int64?

    @Option(
        help: "Largest file a document references that is uploaded, in bytes (K, M, G suffixes allowed; default: 4G, the reference endpoint's). Larger ones are reported, and not read.",
        transform: parseByteCount)
    var maxUploadSize: Int64?

    @Option(help: "Seconds one request to the endpoint may take before it is retried (default: 30).")
    var requestTimeout: Double?

    @Option(help: "Seconds between pulls from an endpoint without a long poll, e.g. sync-rails (default: 10).")
    var pollInterval: Double?

    @Option(help: "Sync only these docTypes, comma-separated: others are neither pulled nor pushed (files of them are reported).")
    var types: String?

    @Option(help: "Sync every docType but these, comma-separated.")
    var excludeTypes: String?

    @OptionGroup var log: LoggingOptions

    @OptionGroup var git: GitFlags

    @Option(help: "Hold the deletions of one pull that would delete more than this percentage of the folder's documents (and at least 100) until `docsync resolve --deletions`; a number from 1 to 100, or off (default: 50).")
    var deletionGuard: String?

    @Option(help: "An end-to-end encrypted folder's passphrase: the first line of this file (else the DOCSYNC_PASSPHRASE environment variable). See docs/ENCRYPTION.md.")
    var passphraseFile: String?

    @Flag(help: "Make `format` in the docTypes' schemas an assertion for date-time, date, time, email, uri, uuid and ipv4 (an annotation by default, as the draft says).")
    var assertFormats = false

    /// `--deletion-guard` as the engine takes it: `nil` inside for off.
    static func deletionGuard(_ text: String) throws -> DeletionGuard? {
        if text == "off" { return nil }
        guard let percent = Double(text.hasSuffix("%") ? String(text.dropLast()) : text), (1...100).contains(percent) else {
            throw ValidationError("--deletion-guard takes a percentage from 1 to 100, or off")
        }
        return DeletionGuard(fraction: percent / 100)
    }

    func validate() throws {
        if let deletionGuard { _ = try Self.deletionGuard(deletionGuard) }
        guard (maxFileSize ?? 1) > 0 else { throw ValidationError("--max-file-size must be positive") }
        guard (maxDownloadSize ?? 1) >= 0 else { throw ValidationError("--max-download-size must not be negative") }
        guard (maxUploadSize ?? 1) >= 0 else { throw ValidationError("--max-upload-size must not be negative") }
        guard (requestTimeout ?? 1) > 0 else { throw ValidationError("--request-timeout must be positive") }
        guard (0.1...86_400).contains(pollInterval ?? 10) else { throw ValidationError("--poll-interval must be between 0.1 and 86400 seconds") }
        _ = try Self.typeList(types, "--types")
        _ = try Self.typeList(excludeTypes, "--exclude-types")
    }

    /// `a,b` as docTypes, each checked.
    static func typeList(_ text: String?, _ flag: String) throws -> [String]? {
        guard let text else { return nil }
        let list = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !list.isEmpty, list.count <= TypeSelection.maxTypes else { throw ValidationError("\(flag) takes 1 to \(TypeSelection.maxTypes) docTypes, comma-separated") }
        for type in list {
            if let problem = DocumentRules.docTypeProblem(type) { throw ValidationError("\(flag): \"\(type)\" is not a docType: \(problem)") }
        }
        return list
    }

    /// The flags given, over what `options` holds (the defaults, or a config file's values).
    func apply(to options: inout AgentOptions) {
        if let maxFileSize { options.maxFileSize = maxFileSize }
        if let maxDownloadSize { options.maxDownloadBytes = maxDownloadSize }
        if let maxUploadSize { options.maxUploadBytes = maxUploadSize }
        if let requestTimeout { options.requestTimeout = .milliseconds(Int64(requestTimeout * 1000)) }
        if let pollInterval { options.pollInterval = .milliseconds(Int64(pollInterval * 1000)) }
        // Checked by `validate()`: nil here is "off".
        if let deletionGuard { options.deletionGuard = try? Self.deletionGuard(deletionGuard) }
        if assertFormats { options.assertFormats = true }
        if let only = try? Self.typeList(types, "--types") { options.selection.only = Set(only) }
        if let except = try? Self.typeList(excludeTypes, "--exclude-types") { options.selection.except = Set(except) }
        // Checked by `GitFlags.validate()`.
        if let git = try? git.options(over: options.git) { options.git = git }
    }

    /// Logging as the flags say, else the environment, else `file` (a config's), else info as text.
    func logging(file: (level: String?, format: String?) = (nil, nil), environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> (Logger.Level, LogFormat)
    {
        try log.resolved(file: file, environment: environment)
    }
}

/// `--log-level` and `--log-format`, the same for every command that runs for a while (`up`,
/// `watch`, `sync`, `serve`), and read the same way: the flags, else `DOCSYNC_LOG_LEVEL` and
/// `DOCSYNC_LOG_FORMAT`, else a config file's, else info as text.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error (default: info).")
    var logLevel: Logger.Level?

    @Option(help: "Log lines as text (under systemd: without timestamps, with priorities) or json (default: text).")
    var logFormat: LogFormat?

    func resolved(file: (level: String?, format: String?) = (nil, nil), environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> (Logger.Level, LogFormat)
    {
        let levelText = environment["DOCSYNC_LOG_LEVEL"].flatMap { $0.isEmpty ? nil : $0 } ?? file.level
        let formatText = environment["DOCSYNC_LOG_FORMAT"].flatMap { $0.isEmpty ? nil : $0 } ?? file.format
        let level = try logLevel ?? levelText.map { text in
            guard let level = Logger.Level(rawValue: text) else { throw ValidationError("unknown log level \"\(text)\" (trace, debug, info, notice, warning, error)") }
            return level
        } ?? .info
        let format = try logFormat ?? formatText.map { text in
            guard let format = LogFormat(rawValue: text) else { throw ValidationError("unknown log format \"\(text)\" (text, json)") }
            return format
        } ?? .text
        return (level, format)
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
/// whatever `body` does (`sync`).
func withAgent<T>(
    directory: String, endpoint: EndpointOptions, tuning: AgentTuning, passphrase: PassphraseChoice = .fromOptions, logger: Logger,
    _ body: (Agent) async throws -> T
) async throws -> T {
    var plan = try WatchPlan.single(
        directory: directory, endpoint: endpoint.endpoint, tokenFile: endpoint.tokenFile, caFile: endpoint.caFile, tuning: tuning, metricsAddr: nil,
        environment: [:])
    switch passphrase {
    case .fromOptions: break
    case .clear: plan.folders[0].passphrase = nil
    case .given(let given): plan.folders[0].passphrase = given
    }
    return try await withAgents(plan, logger: logger) { agents in try await body(agents[0]) }
}

/// Which passphrase a command's agent uses: the options' (`--passphrase-file`, else
/// `DOCSYNC_PASSPHRASE`), none (a folder synced in clear), or one the command has.
enum PassphraseChoice {
    case fromOptions
    case clear
    case given(String)
}
