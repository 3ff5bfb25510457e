#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A throw-away PostgreSQL cluster for tests (Debian's `postgresql`, installed by
/// `scripts/install-deps.sh`): `initdb` into a temp folder, the server on 127.0.0.1 and a free
/// port, trust authentication, no fsync. One per test process, started on first use and killed
/// when the process ends; each test takes a database of its own.
public final class PostgresCluster: Sendable {
    public let port: Int
    let bin: String
    let process: DocsyncProcess
    let folder: TempFolder
    private let databases = Mutex(0)

    private static let starting = Mutex<Task<PostgresCluster, any Error>?>(nil)

    /// The process's cluster, started once.
    public static func shared() async throws -> PostgresCluster {
        let task = starting.withLock { task in
            if let task { return task }
            let new = Task { try await start() }
            task = new
            return new
        }
        return try await task.value
    }

    init(port: Int, bin: String, process: DocsyncProcess, folder: TempFolder) {
        (self.port, self.bin, self.process, self.folder) = (port, bin, process, folder)
    }

    /// `$DOCSYNC_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`.
    static var binDirectory: String? {
        if let bin = ProcessInfo.processInfo.environment["DOCSYNC_PG_BIN"] { return bin }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.compactMap(Int.init).max().map { "/usr/lib/postgresql/\($0)/bin" }
    }

    static func start() async throws -> PostgresCluster {
        guard let bin = binDirectory, FileManager.default.isExecutableFile(atPath: bin + "/initdb") else {
            throw ProcessFailure("no PostgreSQL server: run scripts/install-deps.sh (it installs Debian's postgresql)")
        }
        let folder = try TempFolder("pg")
        // PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
        let asUser = getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] : []
        if getuid() == 0 { try run(["/bin/chown", "-R", "postgres:postgres", folder.path], in: folder) }
        try run(asUser + [bin + "/initdb", "-D", folder.file("data"), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"], in: folder)
        let port = freePort()
        let command = asUser + [
            bin + "/postgres", "-D", folder.file("data"), "-p", String(port), "-k", folder.path, "-c", "listen_addresses=127.0.0.1",
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200",
            // Its dynamic shared memory in the cluster's own folder (removed with it), not in
            // /dev/shm, where a cluster killed with its test process left a segment behind each time.
            "-c", "dynamic_shared_memory_type=mmap",
        ]
        let process = try DocsyncProcess(executable: command[0], arguments: Array(command.dropFirst()), logDirectory: folder.path, name: "postgres")
        let deadline = ContinuousClock.now + .seconds(60)
        while !process.stderr.contains("ready to accept connections") {
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw ProcessFailure("PostgreSQL did not start: \(process.stderr.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return PostgresCluster(port: port, bin: bin, process: process, folder: folder)
    }

    /// A new, empty database; returns its name.
    public func createDatabase() throws -> String {
        let name = "docsync_test_\(databases.withLock { $0 += 1; return $0 })_\(getpid())"
        try Self.run([bin + "/createdb", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", name], in: folder)
        return name
    }

    /// `count` reference endpoints (`docsync serve --database`, the real binary) on a new database
    /// of this cluster, each with a data folder of its own under `work`, their logs named `name1`,
    /// `name2`, …: the processes and their URLs.
    public func serveNodes(
        _ count: Int, work: TempFolder, tokenFile: String, name: String, database: String? = nil, logLevel: String = "warning",
        extra: [String] = []
    ) async throws -> (nodes: [DocsyncProcess], urls: [String]) {
        let url = "postgres://postgres@127.0.0.1:\(port)/\(try database ?? createDatabase())"
        let nodes = try (1...count).map { n in
            try DocsyncProcess(
                ["serve", "--data", work.file("\(name)\(n)-data"), "--port", "0", "--token-file", tokenFile, "--database", url, "--log-level", logLevel] + extra,
                logDirectory: work.path, name: "\(name)\(n)")
        }
        var urls: [String] = []
        do {
            for node in nodes { urls.append(try await node.firstLine()) }
        } catch {
            for node in nodes { await node.stop() }
            throw error
        }
        return (nodes, urls)
    }

    /// `pg_dump` of `database`, as text: what a backup of the server holds.
    public func dump(_ database: String) throws -> String {
        let name = "dump-\(UUID().uuidString.prefix(8))"
        try Self.run([bin + "/pg_dump", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-f", folder.file(name), database], in: folder)
        defer { unlink(folder.file(name)) }
        return try String(contentsOfFile: folder.file(name), encoding: .utf8)
    }

    /// Runs a command to completion; throws with its output when it fails.
    static func run(_ command: [String], in folder: TempFolder) throws {
        let process = try DocsyncProcess(
            executable: command[0], arguments: Array(command.dropFirst()), logDirectory: folder.path, name: "setup-\(UUID().uuidString.prefix(8))")
        process.process.waitUntilExit()
        guard process.process.terminationStatus == 0 else {
            throw ProcessFailure("\(command.joined(separator: " ")) failed: \(process.stderr.suffix(2000))")
        }
    }
}

/// A port nobody listens on right now (the kernel's choice for a socket bound to port 0, then
/// released): for a server that must start, or start again, at an address known beforehand.
public func freePort() -> Int {
    (try? DeadPort(.refusing))?.port ?? 0
}
