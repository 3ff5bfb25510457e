import DocsyncStore
import ArgumentParser
import DocsyncPostgres
import DocsyncServer
import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// `serve --database postgres://USER@HOST[:PORT]/DB[?sslmode=require]`: the documents in
/// PostgreSQL instead of the embedded SQLite file. The password comes from
/// `--database-password-file` or `PGPASSWORD`, never from the command line.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "Keep documents in PostgreSQL: postgres://USER@HOST[:PORT]/DB (add ?sslmode=require for TLS). Several servers may share one.")
    var database: String?

    @Option(help: "A file whose first line is the database password (else PGPASSWORD).")
    var databasePasswordFile: String?

    func validate() throws {
        if let database { _ = try Self.configuration(database, password: nil) }
    }

    /// The PostgreSQL store, when `--database` names one.
    func store(maxDocumentBytes: Int, logger: Logger) async throws -> (any DocumentStore)? {
        guard let database else { return nil }
        var password = ProcessInfo.processInfo.environment["PGPASSWORD"]
        if let file = databasePasswordFile { password = try resolveToken(file: absolutePath(file)) }
        let configuration = try Self.configuration(database, password: password)
        // The database connected in the background: one that answers within 10 s is ready before
        // the server says it listens; a node started while the database is away serves anyway,
        // answering 503 with Retry-After until it can reach it.
        let store = ReconnectingStore(logger: logger) {
            try await PostgresDocumentStore(configuration: configuration, maxDocumentBytes: maxDocumentBytes, logger: logger)
        }
        if !(await store.waitUntilConnected(timeout: .seconds(10))) {
            logger.warning("serving before the database answers: every call is answered 503 until it does")
        }
        return store
    }

    static func configuration(_ url: String, password: String?) throws -> PostgresClient.Configuration {
        guard let parts = URLComponents(string: url), ["postgres", "postgresql"].contains(parts.scheme ?? ""), let host = parts.host,
              let user = parts.user, !user.isEmpty
        else { throw ValidationError("--database must be postgres://USER@HOST[:PORT]/DB, got '\(url)'") }
        guard parts.password == nil else {
            throw ValidationError("--database: the password does not belong on the command line; use --database-password-file or PGPASSWORD")
        }
        let database = String(parts.path.drop { $0 == "/" })
        guard !database.isEmpty else { throw ValidationError("--database names no database: postgres://USER@HOST[:PORT]/DB") }
        let sslmode = parts.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch sslmode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw ValidationError("--database: sslmode must be disable, prefer, require or verify-full, got '\(sslmode)'")
        }
        return PostgresClient.Configuration(host: host, port: parts.port ?? 5432, username: user, password: password, database: database, tls: tls)
    }
}
