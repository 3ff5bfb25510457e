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

    public init(
        clientID: String, clock: ServerClock, requestTimeout: Duration, credential: String, selection: TypeSelection = .all,
        folderTypes: @escaping @Sendable () async -> Set<String> = { [] }
    ) {
        self.selection = selection
        self.folderTypes = folderTypes
        self.clientID = clientID
        self.clock = clock
        self.requestTimeout = requestTimeout
        self.credential = credential
    }
}
