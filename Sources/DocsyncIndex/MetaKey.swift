/// The names of the index's `meta` rows, in one place: what each holds is said here once.
public struct MetaKey: Sendable, Hashable {
    public let name: String

    init(_ name: String) { self.name = name }

    /// The endpoint's cursor: the changes before it are in the folder (or recorded as failed).
    public static let cursor = MetaKey("cursor")
    /// The identity of the store the index was synced with (see `ServerChanges.serverWasReplaced`).
    public static let storeID = MetaKey("store_id")
    /// When the agent last found the server replaced (calibrated ms).
    public static let serverReplacedAt = MetaKey("server_replaced_at")
    /// Set while a full reconcile against the server's live set is under way.
    public static let reconcile = MetaKey("reconcile")
    /// The server's purge horizon time last taken (Unix ms).
    public static let purgedBefore = MetaKey("purged_before")
    /// The selection of docTypes the cursor was taken with.
    public static let typeSelection = MetaKey("type_selection")
    /// This folder's client id: the endpoint does not echo this agent's writes to it.
    public static let clientID = MetaKey("client_id")
    /// The last clock calibration (see `Calibration.encoded`).
    public static let clock = MetaKey("clock")
    /// Since when the endpoint has been unreachable (calibrated ms), and when pushing is tried again.
    public static let offlineSince = MetaKey("offline_since")
    public static let nextRetryAt = MetaKey("next_retry_at")
    /// Why pushing is paused (a refused token).
    public static let paused = MetaKey("paused")
    /// The last transient push failure.
    public static let lastError = MetaKey("last_error")
    /// Why the last scan failed, while rescans are retried.
    public static let scanError = MetaKey("scan_error")
    /// Why pulling fails, while it does.
    public static let pullError = MetaKey("pull_error")
    /// Pulled changes that wait for their files (moved or changed on disk, not yet reported by
    /// the watcher) after a pull's tries: which, while they do.
    public static let pullWaiting = MetaKey("pull_waiting")
    /// Folders without an inotify watch.
    public static let unwatchedFolders = MetaKey("unwatched_folders")

    /// The user's word on held deletions (`apply` or `restore`), until the agent has acted on it.
    public static let deletionsDecision = MetaKey("deletions_decision")
    /// Why deletions are held (the counts the guard saw), while some are.
    public static let deletionsHeld = MetaKey("deletions_held")
    /// Why the folder's own deletions are held (files deleted here, not yet sent), while they are.
    public static let localDeletionsHeld = MetaKey("local_deletions_held")

    /// The last commit of pulled changes made to git (`<sha> <unix ms>`), and why commits are
    /// held back while they are (a rebase in progress, a lock held).
    public static let gitLastCommit = MetaKey("git_last_commit")
    /// Where pulled changes are committed (`the checked-out branch`, `branch NAME`), while the
    /// agent commits them.
    public static let gitMode = MetaKey("git_mode")
    public static let gitHeld = MetaKey("git_held")

    /// The schema documents the folder's documents were last checked against (`id hash` lines):
    /// a schema that differs at start has its docType checked again.
    public static let schemasChecked = MetaKey("schemas_checked")

    /// That a document from the server was refused (and why), said once per id.
    public static func refused(_ id: String) -> MetaKey { MetaKey("refused:" + String(id.prefix(200))) }
}

/// The index cannot be opened where it is, and why (the message says what to do).
public struct IndexError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
