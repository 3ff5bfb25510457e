import ArgumentParser
import DocsyncRuntime
import DocsyncModel
import DocsyncFiles
import DocsyncServer
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the reference endpoint (PingPong routes; documents in embedded SQLite, or PostgreSQL with --database).",
        discussion: "Prints the URL it listens on as its first line of output. With --port 0 it binds a free port.")

    @Option(help: "Folder for the endpoint's data (created if missing): the SQLite store, and uploaded files (with --database, a folder every server shares).")
    var data: String

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var listen: ListenOptions

    @Option(help: "A file of the tokens clients may send, one a line (NAME TOKEN, or TOKEN), read again when it changes (else DOCSYNC_TOKEN, else one is generated into DATA/token).")
    var tokenFile: String?

    @Option(help: "Largest document accepted, in bytes.")
    var maxDocumentSize = 16 << 20

    @Option(help: "Largest uploaded file accepted, in bytes (K, M, G suffixes allowed).", transform: parseByteCount)
    var maxUploadSize: Int64 = 4 << 30

    @Option(help: "Base URL written into documents for uploaded files (default: the address the server listens on).")
    var publicURL: String?

    @Option(help: "PEM certificate chain: serve HTTPS (with --tls-key).")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(help: "How long a deleted document's tombstone is kept before it is purged: 30d, 12h, 90m, 3s, or 'forever'. Agents offline for longer reconcile in full.")
    var tombstoneRetention = "30d"

    @Flag(help: "Refuse a document that fails its docType's schema (a stored document of docType schema whose id is the docType): 422 with the violations, or the batch call's error for that document alone.")
    var enforceSchemas = false

    @Option(help: "Longest a batch call's long poll is held, in seconds (1-60): lower it behind a proxy that closes idle requests sooner.")
    var maxWait = 60

    @Flag(help: "With --enforce-schemas: `format` is an assertion for date-time, date, time, email, uri, uuid and ipv4.")
    var assertFormats = false

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        _ = try parseRetention(tombstoneRetention)
        guard (1...60).contains(maxWait) else { throw ValidationError("--max-wait is from 1 to 60 seconds") }
    }

    @OptionGroup var log: LoggingOptions

    func run() async throws {
        // As every long-running command reads it (flags, then DOCSYNC_LOG_LEVEL/_FORMAT).
        let (level, format) = try log.resolved()
        let logger = bootstrapLogging(level, format: format)
        MetricsExport.bootstrap()
        let dataDirectory = absolutePath(data)
        let token: String
        if tokenFile != nil {
            token = ""  // the file's tokens, read by the server
        } else if ProcessInfo.processInfo.environment["DOCSYNC_TOKEN"] != nil {
            token = try resolveToken(file: nil)
        } else {
            let (generated, file, _) = try ensureToken(in: dataDirectory)
            token = generated
            logger.notice("no token given; clients must send the one stored in \(file)")
        }
        FileSystem.raiseFileLimit()  // a few hundred idle clients must not lock everyone out
        var configuration = ReferenceServer.Configuration(
            host: listen.host, port: listen.port, dataDirectory: dataDirectory, token: token, maxDocumentBytes: maxDocumentSize,
            maxUploadBytes: maxUploadSize, publicURL: publicURL)
        configuration.tokenFile = tokenFile.map(absolutePath)
        configuration.metricsText = { MetricsExport.text() }
        configuration.tombstoneRetention = try parseRetention(tombstoneRetention)
        configuration.enforceSchemas = enforceSchemas
        configuration.assertFormats = assertFormats
        configuration.maxWait = .seconds(maxWait)
        if let tlsCert, let tlsKey {
            let tls = TLSFiles(certificate: absolutePath(tlsCert), key: absolutePath(tlsKey))
            if let problem = try? tls.validityProblem(now: Int64(Date().timeIntervalSince1970)) { logger.warning("\(problem)") }
            configuration.tls = tls
        }
        let store = try await database.store(maxDocumentBytes: maxDocumentSize, logger: logger)
        let server = try ReferenceServer(configuration: configuration, store: store)
        if enforceSchemas, (try? await server.store.get(id: SealedForm.vaultID)) != nil {
            logger.notice("--enforce-schemas: this server holds an end-to-end encrypted folder; its sealed documents cannot be read here and are not checked (their agents check them)")
        }
        let scheme = server.scheme
        let (listening, listens) = AsyncStream<String>.makeStream()
        let app = try server.application(logger: logger) { host, port in
            emit("\(scheme)://\(host):\(port)")
            listens.yield("\(scheme)://\(host):\(port)")
        }
        var services: [any Service] = [app, HangupReload(logger: logger) { server.reload() }]
        let systemd = SystemdNotifier()
        if systemd.isActive { services.append(SystemdServeService(notifier: systemd, listening: listening)) }
        try await signalledGroup(services.map { .init(service: $0) }, logger: logger).run()
    }
}

/// SIGHUP reloads what can change while the server runs (the token file, the TLS certificate):
/// `systemctl reload` (the units' `ExecReload`), or a certificate renewal's hook.
struct HangupReload: Service {
    let logger: Logger
    var what = "the token file and the TLS files"
    let reload: @Sendable () async -> [String]

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangups.cancelOnGracefulShutdown() {
            logger.notice("SIGHUP: reading \(what) again")
            for problem in await reload() { logger.error("\(problem)") }
        }
    }
}

/// The token stored in `directory/token`, generated (32 random bytes, hex, mode 0600) if absent.
/// Returns the token, its file, and whether it was created now.
func ensureToken(in directory: String) throws -> (String, String, Bool) {
    let file = directory + "/token"
    if let token = try? resolveToken(file: file) { return (token, file, false) }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    var generator = SystemRandomNumberGenerator()
    let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    guard FileManager.default.createFile(atPath: file, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
        throw ValidationError("cannot write the token file \(file)")
    }
    return (token, file, true)
}

/// `30d`, `12h`, `90m`, `3s` (`nil` for `forever`).
func parseRetention(_ text: String) throws -> Duration? {
    if text == "forever" { return nil }
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    guard let unit = text.last.flatMap({ units[$0] }), let n = Int64(text.dropLast()), n > 0, n <= 100 * 365 * 86_400 / unit else {
        throw ValidationError("--tombstone-retention takes a duration like 30d, 12h, 90m or 3s, or 'forever': not '\(text)'")
    }
    return .seconds(n * unit)
}

/// `123`, `64K`, `512M`, `2G` → bytes.
func parseByteCount(_ text: String) throws -> Int64 {
    let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
    var digits = text.uppercased()
    var unit: Int64 = 1
    if digits.hasSuffix("B") { digits.removeLast() }
    if let last = digits.last, let u = units[last] {
        unit = u
        digits.removeLast()
    }
    guard let n = Int64(digits), n >= 0, n <= Int64.max / unit else { throw ValidationError("'\(text)' is not a size like 512M") }
    return n * unit
}
