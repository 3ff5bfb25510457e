import DocsyncClock
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import Logging

/// What every part of one folder's engine is made from: made once, by `Agent.init`, before any
/// part, and never changed. A part keeps it (``FolderPart``) and reads from it; what only one part
/// uses (a limit, a signal between two parts) is given to that part alone.
struct FolderContext: Sendable {
    /// The synced folder (no trailing `/`).
    let root: String
    /// Whether the folder at `root` is still the one synced.
    let gate: PathGate
    let index: Index
    /// The server-calibrated clock that stamps every change.
    let clock: ServerClock
    let logger: Logger
    let metrics: AgentMetrics
    /// The backoff after failures.
    let policy: RetryPolicy
    /// The token, and the file it may be read again from.
    let credential: Credential
    /// The docTypes this folder syncs.
    let selection: TypeSelection
}

/// A part of one folder's engine (the scanner, the pusher and puller, the uploader and
/// downloader, the server's changes and their applier, the git committer, the schema check): it
/// keeps the folder's context and reads the shared values through it, so none is copied into a
/// stored property of its own (`check-seams.sh` fails on a copy).
protocol FolderPart: Sendable {
    var context: FolderContext { get }
}

extension FolderPart {
    var root: String { context.root }
    var gate: PathGate { context.gate }
    var index: Index { context.index }
    var clock: ServerClock { context.clock }
    var logger: Logger { context.logger }
    var metrics: AgentMetrics { context.metrics }
    var policy: RetryPolicy { context.policy }
    var credential: Credential { context.credential }
    var selection: TypeSelection { context.selection }
}
