import DocsyncSQL
import GRDB

extension Index {
    /// The path an in-memory index says it has (``Index/path`` names no file).
    public static let inMemoryPath = ":memory:"

    /// An index over an in-memory database, with the same schema, counts and transactions as one
    /// on disk: the engine's rules run on it without a file (as GRDB's `AppDatabase` takes any
    /// `DatabaseWriter`). It lives as long as the value: an agent made again over the same value
    /// finds what the first one left, as after a restart.
    ///
    /// One connection (an in-memory database is private to its connection), read through the
    /// queue, so a read sees the writes before it; never closed while idle, since a closed one
    /// would be empty.
    public static func inMemory(tallyKeeper: TallyCounter.Keeper = .hook) throws -> Index {
        SQLiteSetup.prepare()
        let tally = TallyCounter()
        var config = Configuration()
        config.prepareDatabase { _ in withExtendedLifetime(tally) {} }
        let queue = try DatabaseQueue(configuration: config)
        try migrator.migrate(queue)
        let preferHook = tallyKeeper == .hook
        try queue.barrierWriteWithoutTransaction { db in try tally.install(on: db, preferHook: preferHook) }
        return Index(
            pool: IdleClosingPool(first: queue) { throw IndexError("an in-memory index cannot be opened again once closed") },
            path: inMemoryPath, tally: tally, readPermits: Permits(1), readsOnWriter: false, uses: nil)
    }

    /// Whether the index is in memory (no file: `status` has nothing to open).
    public var isInMemory: Bool { path == Self.inMemoryPath }

    private init(pool: IdleClosingPool, path: String, tally: TallyCounter, readPermits: Permits, readsOnWriter: Bool, uses: Permits?) {
        self.pool = pool
        self.path = path
        self.tally = tally
        self.readPermits = readPermits
        self.readsOnWriter = readsOnWriter
        self.uses = uses
    }
}
