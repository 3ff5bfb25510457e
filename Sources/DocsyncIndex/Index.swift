import DocsyncSQL
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The agent's local state: one SQLite file (WAL) at `<root>/.docsync/index.sqlite`.
///
/// It holds what the agent knows about every file (path, id, docType, content hash and the
/// size/mtime/inode that let a rescan skip reading unchanged files), every document it has seen
/// (tombstones included), and the outbox of work for the endpoint. A change and the outbox entry it
/// creates are written in one transaction, so a crash leaves either both or neither.
public struct Index: Sendable {
    /// The pool is the index's own: everything else reads and writes through `read`/`write`, so
    /// one opened index serves the agent, `status`, the page, the progress line and systemd. A lean
    /// index closes it while idle (``releaseMemory()``).
    let pool: IdleClosingPool
    public let path: String
    /// The writing connection's counts for `status` (see `Index+Tally.swift`).
    public let tally: TallyCounter
    /// One per reader, for the async reads (see `Permits`).
    let readPermits: Permits
    /// A lean index reads on its writing connection, so the folder keeps one connection, not two:
    /// with hundreds of folders each connection's parsed schema, statements and pages add up.
    let readsOnWriter: Bool
    /// A lean index's async uses go through ``Footprint/leanUses``.
    let uses: Permits?
    /// The longest `IN` list of a transaction's statements: shorter on a lean index (the one
    /// that reads on its writer), whose few connections keep each length's statement prepared.
    var inListLimit: Int { readsOnWriter ? IndexTransaction.leanInListLimit : IndexTransaction.longestInList }
    /// Counts the write transactions run, so who polls (the progress line, `LeanMemory`) can tell
    /// nothing changed without a read: with hundreds of idle folders, each read refilled the
    /// caches `releaseMemory()` had emptied.
    public let writes = WriteCount()

    /// How much memory the index may keep: one folder has the machine to itself; hundreds of
    /// folders in one process each get a little (one connection, a small page cache).
    public enum Footprint: Sendable {
        case roomy
        case lean

        /// `lean` from this many folders in one process on.
        public static let leanFrom = 32

        /// A lean connection's page cache: the least that helps, since SQLite keeps at least ten
        /// pages (80 KiB) whatever is asked, and hundreds of folders each hold theirs at the peak
        /// (the figures are in BENCHMARKS.md).
        static let leanCacheKiB = 64

        public static func forFolders(_ count: Int) -> Footprint { count >= leanFrom ? .lean : .roomy }

        /// The lean indexes of a process share a few uses at a time. Hundreds of folders whose long
        /// polls end together would otherwise each open their file at once, on a thread each: the
        /// process went to libdispatch's cap of threads, and its memory with them, every 25 s.
        static let leanUses = Permits(2 * max(2, ProcessInfo.processInfo.activeProcessorCount))

        /// The lean indexes of a process that hold a connection at once (see ``OpenIndexes``):
        /// well above the uses at once, so that a folder at work keeps its statements between uses.
        static let openLimit = OpenIndexes(capacity: 64)
    }

    /// Opens (creating and migrating as needed) the index database at `path`. `tallyKeeper`
    /// `.triggers` keeps the counts as SQLite without a pre-update hook does (for the tests).
    public init(path: String, tallyKeeper: TallyCounter.Keeper = .hook, footprint: Footprint = .roomy) throws {
        try self.init(path: path, tallyKeeper: tallyKeeper, footprint: footprint, openLimit: footprint == .lean ? Footprint.openLimit : nil)
    }

    /// `openLimit`: the bound a lean index counts itself in (the process's, or a test's own).
    init(path: String, tallyKeeper: TallyCounter.Keeper = .hook, footprint: Footprint, openLimit: OpenIndexes?) throws {
        SQLiteSetup.prepare()
        var config = Configuration()
        config.busyMode = .timeout(10)
        // SQLite's default cache is 2 MiB a connection, and a pool opens up to five readers.
        let lean = footprint == .lean
        if lean { config.maximumReaderCount = 1 }
        // Held by the pool's configuration, so they live as long as the connections that use them.
        let checkpointer = WALCheckpointer(path: path)
        let tally = TallyCounter()
        config.prepareDatabase { db in
            withExtendedLifetime(tally) {}
            if lean {
                try db.execute(sql: "PRAGMA cache_size = -\(Footprint.leanCacheKiB)")
                // A lean index is closed while idle: the log and its `-shm` stay (the log cut to
                // nothing), where SQLite would delete both at each close and create them at each open.
                var persist: Int32 = 1
                sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
            }
            // Document rows are about a kilobyte: 8 KiB pages hold seven of them where 4 KiB
            // pages held three and wasted a fifth of the file. Takes effect on a new index only.
            try db.execute(sql: "PRAGMA page_size = 8192")
            // WAL + NORMAL: a commit survives a killed process (the tests' SIGKILL); only a power
            // cut can lose the last transactions, which the restart rescan then redoes.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // A WAL that grew during an import is cut back to 64 MiB once it starts over.
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
            // Checkpoints run on their own connection and thread (see `WALCheckpointer`).
            checkpointer.install(on: db)
        }
        self.path = path
        let preferHook = tallyKeeper == .hook
        let withTally = { @Sendable (writer: any DatabaseWriter) throws -> any DatabaseWriter in
            try writer.barrierWriteWithoutTransaction { db in try tally.install(on: db, preferHook: preferHook) }
            return writer
        }
        let first = try DatabasePool(path: path, configuration: config)
        try Self.migrator.migrate(first)
        // Only a lean index is ever closed (``releaseMemory()``), and it reopens as one queue.
        self.pool = IdleClosingPool(first: try withTally(first), limit: openLimit) { [config] in try withTally(DatabaseQueue(path: path, configuration: config)) }
        self.tally = tally
        self.readPermits = Permits(config.maximumReaderCount)
        self.readsOnWriter = lean
        self.uses = lean ? Footprint.leanUses : nil
    }

    /// Opens the index of the synced folder `root`, creating `<root>/.docsync/` with a `.gitignore`
    /// holding `*` so the state folder never shows up in the user's git tree.
    public static func open(root: String, footprint: Footprint = .roomy) throws -> Index {
        try Index(path: try makeStateDirectory(root: root) + "/index.sqlite", footprint: footprint)
    }

    /// Makes `<root>/.docsync/` (with its `.gitignore`) if it is not there, and returns its path:
    /// the agent keeps its lock, trash and staging there whichever index it has.
    @discardableResult
    public static func makeStateDirectory(root: String) throws -> String {
        let dir = stateDirectory(root: root)
        try refuseLinks(in: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let gitignore = dir + "/.gitignore"
        if !FileManager.default.fileExists(atPath: gitignore) {
            try Data("*\n".utf8).write(to: URL(fileURLWithPath: gitignore))
        }
        return dir
    }

    /// The state folder and the folders in it are the agent's own: a symlink there would send its
    /// index, trash or cache somewhere else (and every write through the gate would be refused
    /// while `status` said synced). Refused with what to do instead.
    static func refuseLinks(in dir: String) throws {
        var paths = [dir]
        if let names = try? FileManager.default.contentsOfDirectory(atPath: dir) { paths += names.map { dir + "/" + $0 } }
        for path in paths {
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFLNK else { continue }
            throw IndexError("\(path) is a symlink: docsync keeps its state only in a real folder inside the synced one; remove the link (the state is made again)")
        }
    }

    /// Whether `root` has an index yet (status refuses to create one).
    public static func exists(root: String) -> Bool {
        FileManager.default.fileExists(atPath: stateDirectory(root: root) + "/index.sqlite")
    }

    public static func stateDirectory(root: String) -> String { root + "/" + stateFolderName }

    /// The agent's own folder under the synced root.
    public static let stateFolderName = ".docsync"

    /// Runs `body` in one write transaction (every write goes through here or ``writeSync(_:)``:
    /// the counts the transaction changed are added to `tally` before it commits).
    public func write<T: Sendable>(_ body: @escaping @Sendable (IndexTransaction) throws -> T) async throws -> T {
        try await gated { [pool, tally, writes, inListLimit] in
            try await pool.use { pool in try await pool.write { db in try Self.counting(tally, writes, inListLimit, db, body) } }
        }
    }

    /// `body` holding one of the lean uses, for a lean index.
    private func gated<T>(_ body: () async throws -> T) async throws -> T {
        guard let uses else { return try await body() }
        return try await uses.withPermit(body)
    }

    /// ``write(_:)`` carried to its end even when the calling task is cancelled (an async write
    /// is rolled back then): the record of what is already on disk, files made, replaced or
    /// moved away. A stop between the two left files the index did not know, and a pull tried
    /// again in the same run wrote them once more beside the first (`<id>-2.json`), which the
    /// next start took for copies.
    public func writeToEnd<T: Sendable>(_ body: @escaping @Sendable (IndexTransaction) throws -> T) async throws -> T {
        // An unstructured task: its caller's cancellation does not reach it.
        try await Task { try await write(body) }.value
    }

    /// ``write(_:)`` on the caller's thread.
    public func writeSync<T>(_ body: (IndexTransaction) throws -> T) throws -> T {
        try pool.use { pool in try pool.write { db in try Self.counting(tally, writes, inListLimit, db, body) } }
    }

    /// `body` with its counts kept. A transaction that changed no row (a pull that found nothing
    /// new) leaves `writes` as it was, so an idle folder stays idle to who watches the count.
    private static func counting<T>(_ tally: TallyCounter, _ writes: WriteCount, _ inListLimit: Int, _ db: Database, _ body: (IndexTransaction) throws -> T) throws -> T {
        let changesBefore = db.totalChangesCount
        defer { if db.totalChangesCount != changesBefore { writes.bump() } }
        tally.reset()
        let result = try body(IndexTransaction(db: db, inListLimit: inListLimit))
        try tally.flush(db)
        return result
    }

    /// Runs `body` on a read-only snapshot. A lean index reads on its writing connection (see
    /// ``readsOnWriter``).
    public func read<T: Sendable>(_ body: @escaping @Sendable (IndexTransaction) throws -> T) async throws -> T {
        if readsOnWriter {
            return try await gated { [pool, inListLimit] in
                try await pool.use { pool in try await pool.writeWithoutTransaction { db in try Self.snapshot(db, inListLimit, body) } }
            }
        }
        return try await readPermits.withPermit { [pool] in
            try await pool.use { pool in try await pool.read { db in try body(IndexTransaction(db: db)) } }
        }
    }

    public func readSync<T>(_ body: (IndexTransaction) throws -> T) throws -> T {
        try pool.use { pool in
            if readsOnWriter { return try pool.writeWithoutTransaction { db in try Self.snapshot(db, inListLimit, body) } }
            return try pool.read { db in try body(IndexTransaction(db: db)) }
        }
    }

    /// `body` in a deferred transaction that only reads: a snapshot, as on a reader.
    private static func snapshot<T>(_ db: Database, _ inListLimit: Int, _ body: (IndexTransaction) throws -> T) throws -> T {
        var result: T?
        try db.inTransaction(.deferred) {
            result = try body(IndexTransaction(db: db, inListLimit: inListLimit))
            return .commit
        }
        return result!
    }

    /// Whether the index holds its connections open now (a lean index closes them while idle).
    public var holdsConnection: Bool { pool.ifOpen != nil }

    /// Gives back what the connections keep between uses: a lean index closes its pool (opened
    /// again at the next use), a roomy one closes its readers and empties its caches. For a
    /// folder that has been idle a while, among hundreds in one process.
    public func releaseMemory() async {
        guard readsOnWriter else { return (pool.ifOpen as? DatabasePool)?.releaseMemoryEventually() ?? () }
        // Awaited: one folder at a time, where hundreds of queued releases at once had libdispatch
        // start a thread for each.
        await pool.closeIfUnused()
    }
}

/// How many write transactions an index has run (those that failed included: a reader that sees
/// the count move reads again, which is only ever one read too many).
public final class WriteCount: Sendable {
    private let count = Atomic<UInt64>(0)

    public var value: UInt64 { count.load(ordering: .acquiring) }

    func bump() { count.add(1, ordering: .releasing) }
}

/// The index as who looks at it on a timer can tell it without opening it: its own write count
/// (``Index/writes``), and its files as `stat` sees them, since any process's write to the index
/// (a `docsync resolve` beside the agent) changes their change time or size. A look that found
/// nothing to do is skipped while the stamp stays as it was before that look.
public struct IndexStamp: Equatable, Sendable {
    let writes: UInt64
    let database: [Int]
    let log: [Int]

    init(writes: UInt64, path: String) {
        self.writes = writes
        database = Self.statFields(path)
        log = Self.statFields(path + "-wal")
    }

    private static func statFields(_ path: String) -> [Int] {
        var st = stat()
        guard stat(path, &st) == 0 else { return [] }
        return [Int(st.st_ino), Int(st.st_size), st.st_ctim.tv_sec, st.st_ctim.tv_nsec, st.st_mtim.tv_sec, st.st_mtim.tv_nsec]
    }
}

extension Index {
    /// The stamp now (see ``IndexStamp``).
    public var stamp: IndexStamp { IndexStamp(writes: writes.value, path: path) }
}
