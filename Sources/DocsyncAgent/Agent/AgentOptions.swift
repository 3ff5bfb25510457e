import DocsyncIndex
import DocsyncModel
import DocsyncWatcher

/// How an agent is set up: the folder, the endpoint, the token and the limits.
public struct AgentOptions: Sendable {
    public var root: String
    public var endpointURL: String
    public var token: String
    /// Where the token came from, re-read when the endpoint rejects it.
    public var tokenFile: String?
    public var maxFileSize: Int = DocumentRules.defaultMaxFileSize
    public var settle: Duration = .milliseconds(5)
    public var maxDelay: Duration = .milliseconds(100)
    /// A file that left in one watcher batch and came back (same id, same content) in a later one
    /// within this long is a move, sent as none: the deletion waits this long before it leaves.
    public var movePairing: Duration = .seconds(1)
    /// How long one request may take before it counts as failed (and is retried).
    public var requestTimeout: Duration = .seconds(30)
    /// When no traffic has refreshed the clock estimate for this long, ask `/api/time`.
    public var clockMaxAge: Duration = .seconds(600)
    public var retryPolicy = RetryPolicy()
    /// How often folders left without an inotify watch are rescanned.
    public var unwatchedRescan: Duration = .seconds(30)
    /// How often an endpoint without a long poll is asked for changes.
    public var pollInterval: Duration = .seconds(10)
    /// The folder's name in metrics (the `folder` label) and the status page; by default the
    /// folder's own name.
    public var name: String?
    /// The docTypes this folder syncs (`--types`, `--exclude-types`).
    public var selection = TypeSelection.all
    /// Ignore rules in `.docsyncignore`'s form, added to the folder's own (a config's `ignore:`).
    public var extraIgnore: [String] = []
    /// One pull deleting more of the folder than this is held for the user's word; `nil`: off.
    public var deletionGuard: DeletionGuard? = DeletionGuard()
    /// Pulled changes committed to git (`--git-commit`, `--git-branch`); `nil`: git is left alone.
    public var git: GitHistoryOptions?
    /// `--assert-formats`: the docTypes' schemas assert `format` (date-time, date, time, email,
    /// uri, uuid, ipv4) instead of taking it as an annotation, as the draft does by default.
    public var assertFormats = false
    /// Referenced files larger than this are not uploaded (reported instead), and not read: their
    /// size is known before their content is hashed. The reference endpoint's default limit.
    public var maxUploadBytes: Int64 = AgentOptions.defaultMaxUploadBytes
    public static let defaultMaxUploadBytes: Int64 = 4 << 30
    /// Attached files larger than this are not downloaded (reported instead).
    public var maxDownloadBytes: Int64 = 4 << 30
    /// Test seam: watches beyond this many are refused as by a low `fs.inotify.max_user_watches`.
    public var watchLimit: Int?
    /// The inotify instance and thread this folder's watches share with the other folders of the
    /// process (`nil`: one of its own).
    public var watchHub: InotifyHub?
    /// How much memory the folder's index keeps (lean with hundreds of folders in one process).
    public var indexFootprint: Index.Footprint = .roomy
    /// Shared by the folders of one process: how many do heavy work at once (`nil`: no limit).
    /// A folder's start (index, watches, stored clock) and first full scan go ahead; its pulls of
    /// the others' changes take turns behind them. Hundreds of folders scanning, pushing and
    /// pulling at once hold all their batches at the same moment (the heap keeps much of that as
    /// fragments after), and a folder that pulled while others had not yet scanned pulled each of
    /// their documents on its own, one round each. Pushes take no turn: a save goes out at once.
    public var turns: Permits?
    /// The most changes a long poll asks for, when ``turns`` are shared (``EndpointContext/longPollPage``):
    /// each reply waits for its folder's turn, and 300 folders' full pages waiting at once held
    /// 125 MiB; the rest of a large change comes by catch-ups, each fetched in its turn.
    public var longPollPage: Int? { turns == nil ? nil : Self.sharedLongPollPage }
    public static let sharedLongPollPage = 20
    /// Called once the first full scan has queued the folder's changes and the watches are in
    /// place (a service manager's "ready").
    public var onWatching: (@Sendable () -> Void)?
    /// Called between a pulled change's write and its record (``ChangeApplier/beforeRecording``);
    /// for tests only.
    var beforeRecordingAPulledWrite: (@Sendable (String) async -> Void)?

    public init(root: String, endpointURL: String, token: String, tokenFile: String? = nil) {
        self.root = root
        self.endpointURL = endpointURL
        self.token = token
        self.tokenFile = tokenFile
    }
}
