/// What an endpoint offers, declared by its adapter: the engine shapes its work from this and
/// never guesses from a status code.
public struct EndpointCapabilities: Sendable, Equatable {
    /// How the engine learns of the server's changes.
    public enum Pull: Sendable, Equatable {
        /// Not known yet (the adapter finds out with its first replies).
        case unknown
        /// Push only: nothing is pulled.
        case none
        /// A pull may wait on the server until something changes.
        case longPoll
        /// Pull again every `--poll-interval`.
        case poll
    }

    /// Changes per push call, and its byte budget (a larger change goes alone).
    public var documentsPerCall: Int
    public var bytesPerCall: Int
    /// Push calls the engine keeps in flight at once.
    public var callsInFlight: Int
    public var pull: Pull
    /// A push call also returns the changes since the cursor it was given.
    public var pullsWithPush: Bool
    /// The server refuses a write based on an old revision (a conflict, merged by the engine).
    /// Without it the last write wins on the server.
    public var detectsConflicts: Bool
    public var uploads: Bool
    /// Files one document may carry (`nil`: any number). A reference beyond it is reported as a
    /// bad reference of its property and not sent (Kinto's attachment plugin holds one a record).
    public var filesPerDocument: Int?
    /// Members of a document the server writes itself and expects back as it wrote them (Kinto's
    /// `attachment`): an end-to-end sealed folder keeps them in clear beside the seal.
    public var serverMembers: Set<String> = []
    /// The page after a reply may be asked for while that reply is applied (the engine's page
    /// ahead). Not where asking after a page is what tells the adapter the page was applied (a
    /// poll of listings, which keeps no history to give a page again).
    public var pagesAskedAhead = true

    public init(
        documentsPerCall: Int, bytesPerCall: Int, callsInFlight: Int, pull: Pull, pullsWithPush: Bool, detectsConflicts: Bool,
        uploads: Bool, filesPerDocument: Int? = nil
    ) {
        self.documentsPerCall = documentsPerCall
        self.bytesPerCall = bytesPerCall
        self.callsInFlight = callsInFlight
        self.pull = pull
        self.pullsWithPush = pullsWithPush
        self.detectsConflicts = detectsConflicts
        self.uploads = uploads
        self.filesPerDocument = filesPerDocument
    }
}
