import DocsyncClock
import DocsyncModel

/// What the agent hands an adapter when it makes one for a folder.
public struct EndpointContext: Sendable {
    /// This folder's client id: a server that knows it does not echo the folder's own writes.
    public var clientID: String
    /// The clock every reply's timing and date headers feed.
    public var clock: ServerClock
    /// How long one request may take before it counts as failed.
    public var requestTimeout: Duration
    /// The token (or `user:password`), from a file or the environment.
    public var credential: String
    /// The docTypes the folder syncs: an adapter whose server can filter asks for these alone
    /// (the engine drops any other that arrives).
    public var selection: TypeSelection
    /// The docTypes the folder's documents have: what an adapter without a change feed polls.
    public var folderTypes: @Sendable () async -> Set<String>
    /// Each document's sealing counter, kept with the folder's index: an end-to-end sealed
    /// endpoint numbers the versions it seals and refuses one older than it has seen (a server
    /// replaying an old ciphertext).
    public var sealCounters: (any SealCounters)?
    /// The most changes a long poll's reply may carry (`nil`: the server's page). With many folders
    /// in one process a reply waits for its folder's turn to be written: a small one keeps what
    /// waits small, and the rest comes by catch-up pulls, each in its turn.
    public var longPollPage: Int?

    public init(
        clientID: String, clock: ServerClock, requestTimeout: Duration, credential: String, selection: TypeSelection = .all,
        folderTypes: @escaping @Sendable () async -> Set<String> = { [] }, sealCounters: (any SealCounters)? = nil, longPollPage: Int? = nil
    ) {
        self.longPollPage = longPollPage
        self.sealCounters = sealCounters
        self.selection = selection
        self.folderTypes = folderTypes
        self.clientID = clientID
        self.clock = clock
        self.requestTimeout = requestTimeout
        self.credential = credential
    }
}

/// The version counters of sealed documents (see ``EndpointContext/sealCounters``), a batch at
/// a time (one transaction for a push's or a page's documents).
public protocol SealCounters: Sendable {
    /// The number each document's next sealed version carries: one past the highest seen (a
    /// version the server stored counts as seen).
    func next(_ ids: [String]) async throws -> [String: Int64]
    /// Versions were opened: the ids of those older than the highest seen (replays); the highest
    /// of the others raised to what was seen.
    func saw(_ versions: [(id: String, number: Int64)]) async throws -> Set<String>
}
