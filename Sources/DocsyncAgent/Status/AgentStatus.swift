import DocsyncClock
import DocsyncIndex
import DocsyncModel

/// What `docsync status` reports, read from the index alone (the agent need not be running).
public struct AgentStatus: Sendable {
    public var counts: StatusCounts
    public var offlineSince: Int64?
    /// When pushing is tried again, on ``RetryPolicy/deadlineNow()``'s clock.
    public var nextRetryAt: Int64?
    public var lastError: String?
    public var paused: String?
    /// Why the last scan of the folder failed, while rescans are retried.
    public var scanError: String?
    /// Why pulling fails, while it does.
    public var pullError: String?
    /// Pulled changes waiting for their files after a pull's tries: how many, and which.
    public var pullWaiting: String?
    /// Folders without an inotify watch (the limit reached), rescanned on a timer instead.
    public var unwatchedFolders: Int
    public var invalidFiles: [(path: String, reason: String)]
    public var rejected: [(id: String, path: String?, reason: String)]
    /// FileUpload jobs that are not done: pending, in flight, failed or with a bad reference.
    public var uploads: [UploadStatus]
    /// Files others attached: on their way into the folder, or not fetched and why.
    public var downloads: [DownloadStatus]
    /// The last stored clock calibration (`nil`: never calibrated, changes carry local time).
    public var clock: Calibration?
    /// Pulled changes that could not be written into the folder (retried): how many, and the
    /// first few with why.
    public var pullFailureCount: Int
    public var pullFailures: [IndexTransaction.PullFailure]
    /// Deletions from the server held for the user's word (see ``DeletionGuard``), and why.
    public var heldDeletions: Int
    public var heldBecause: String?
    /// The folder's own deletions held by the same guard (see ``LocalDeletionGuard``), and why.
    public var heldLocalDeletions = 0
    public var heldLocalBecause: String?
    /// Edits the token may not send (HTTP 403): how many, and the first few with why. Kept in
    /// their files, sent again when the file or the token changes.
    public var notAllowedCount = 0
    public var notAllowed: [(what: String, reason: String)] = []
    /// Documents from the server that could not be taken (sealed and not opening, a docType that
    /// cannot be a folder, …): how many, and the first few with why. Their files are untouched.
    public var refusedCount = 0
    public var refused: [(id: String, reason: String)] = []
    /// Commits of pulled changes, with `--git-commit` or `--git-branch`.
    public var git = GitStatus()
    /// Saves held back by their docType's schema, and synced documents that do not conform.
    public var schemas = SchemaStatus()

    /// Whether nothing waits, fails or needs the user: what "in sync" means on every surface
    /// (`status`, the page, `/status`). `conflictCopies`: copies found in the tree.
    public func inSync(conflictCopies: Int = 0) -> Bool {
        counts.pending == 0 && counts.invalid == 0 && counts.rejected == 0 && offlineSince == nil && paused == nil
            && pullFailureCount == 0 && pullError == nil && pullWaiting == nil && heldDeletions == 0 && heldLocalBecause == nil && notAllowedCount == 0
            && conflictCopies == 0
    }

    public static func read(root: String) async throws -> AgentStatus {
        try await read(Index.open(root: root))
    }

    /// From an index already open (a listener asked every few seconds keeps one).
    public static func read(_ index: Index) async throws -> AgentStatus {
        try await index.read { tx in
            let failed = try tx.pullFailures(limit: 20)
            var status = AgentStatus(
                counts: try tx.statusCounts(),
                offlineSince: try tx.meta(.offlineSince).flatMap { Int64($0) },
                nextRetryAt: try tx.meta(.nextRetryAt).flatMap { Int64($0) },
                lastError: try tx.meta(.lastError) ?? tx.lastOutboxError(),
                paused: try tx.meta(.paused),
                scanError: try tx.meta(.scanError),
                pullError: try tx.meta(.pullError),
                pullWaiting: try tx.meta(.pullWaiting),
                unwatchedFolders: try tx.meta(.unwatchedFolders).flatMap { Int($0) } ?? 0,
                invalidFiles: try tx.invalidFiles().map { ($0.path, $0.error) },
                rejected: try tx.rejectedDocuments().map { ($0.id, $0.path, $0.error) },
                uploads: try tx.uploadsNeedingAttention().map {
                    UploadStatus(
                        document: $0.documentPath ?? $0.upload.docID, property: $0.upload.property, file: $0.upload.path,
                        state: $0.upload.state.rawValue, bytesSent: $0.upload.bytesSent, size: $0.upload.stat?.size,
                        attempts: $0.attempts, error: $0.upload.error ?? $0.lastError)
                },
                downloads: try tx.downloadsForStatus().map(DownloadStatus.init),
                clock: try tx.meta(.clock).flatMap(Calibration.decode), pullFailureCount: failed.count, pullFailures: failed.first,
                heldDeletions: try tx.heldDeletionCount(), heldBecause: try tx.meta(.deletionsHeld))
            (status.notAllowedCount, status.notAllowed) = try tx.notAllowed(limit: 20)
            (status.refusedCount, status.refused) = try tx.refusedFromServer(limit: 20)
            status.heldLocalBecause = try tx.meta(.localDeletionsHeld)
            status.heldLocalDeletions = status.heldLocalBecause == nil ? 0 : try tx.heldLocalDeletionCount()
            status.git = try GitStatus.read(tx)
            status.schemas = try SchemaStatus.read(tx)
            return status
        }
    }

    /// The JSON form: stable keys, for scripts.
    public func json(now: Int64) -> JSONValue {
        func ts(_ ms: Int64?) -> JSONValue { ms.map { .string(Timestamp(unixMilliseconds: $0).rfc3339) } ?? .null }
        func str(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        let nextIn: JSONValue = nextRetryAt.map { .number(String(format3(Double(max(0, $0 - RetryPolicy.deadlineNow())) / 1000))) } ?? .null
        var object = JSONObject([
            ("synced", .number(String(counts.synced))),
            ("pending", .number(String(counts.pending))),
            ("invalid", .number(String(counts.invalid))),
            ("rejected", .number(String(counts.rejected))),
            ("excluded", .number(String(counts.excluded))),
            ("live", .number(String(counts.live))),
            ("tombstones", .number(String(counts.tombstones))),
            ("offline_since", ts(offlineSince)),
            ("next_retry_in_s", offlineSince == nil ? .null : nextIn),
            ("last_error", str(lastError)),
            ("paused", str(paused)),
            ("scan_error", str(scanError)),
            ("pull_error", str(pullError)),
            ("pull_waiting", str(pullWaiting)),
            ("unwatched_folders", .number(String(unwatchedFolders))),
            ("invalid_files", schemas.invalidFilesJSON(invalidFiles)),
            ("clock", clockJSON),
            ("rejected_documents", .array(rejected.map {
                .object(JSONObject([("id", .string($0.id)), ("path", str($0.path)), ("reason", .string($0.reason))]))
            })),
            ("uploads", .array(uploads.map { u in
                .object(JSONObject([
                    ("document", .string(u.document)), ("property", .string(u.property)), ("file", str(u.file)), ("state", .string(u.state)),
                    ("bytes_sent", .number(String(u.bytesSent))), ("size", u.size.map { .number(String($0)) } ?? .null),
                    ("attempts", .number(String(u.attempts))), ("error", str(u.error)),
                ].map { (key: $0.0, value: $0.1) }))
            })),
            ("downloads", .array(downloads.map(\.json))),
        ].map { (key: $0.0, value: $0.1) })
        object["pull_failures"] = .number(String(pullFailureCount))
        object["pull_failed"] = pullFailedJSON
        object["held_deletions"] = .number(String(heldDeletions))
        object["held_local_deletions"] = .number(String(heldLocalDeletions))
        object["not_allowed"] = .number(String(notAllowedCount))
        object["not_allowed_documents"] = .array(notAllowed.map { .object(JSONObject([(key: "path", value: .string($0.what)), (key: "reason", value: .string($0.reason))])) })
        object["refused_from_server"] = .number(String(refusedCount))
        object["refused_documents"] = .array(refused.map { .object(JSONObject([(key: "id", value: .string($0.id)), (key: "reason", value: .string($0.reason))])) })
        if let heldLocalBecause { object["held_local_because"] = .string(heldLocalBecause) }
        if git.isUsed { object["git"] = git.json }
        object["nonconforming"] = .number(String(schemas.nonconformingCount))
        object["nonconforming_documents"] = schemas.nonconformingJSON
        return .object(object)
    }

    /// The first few pulled changes that could not be written, for scripts.
    var pullFailedJSON: JSONValue {
        .array(pullFailures.map { failure -> JSONValue in
            let members: [(key: String, value: JSONValue)] = [
                (key: "id", value: .string(failure.id)), (key: "reason", value: .string(failure.reason)),
                (key: "attempts", value: .number(String(failure.attempts))),
            ]
            return .object(JSONObject(members))
        })
    }

    /// Server minus local wall clock, ms, for a calibration made on this boot.
    var clockOffsetMs: Double? {
        guard let clock, clock.bootID == Calibration.currentBootID() else { return nil }
        let seam = SystemClockSeam()
        return Double(clock.offset + seam.bootNanoseconds() - seam.wallNanoseconds()) / 1_000_000
    }

    var clockJSON: JSONValue {
        guard let clock, let offset = clockOffsetMs else { return .object(JSONObject([(key: "calibrated", value: false)])) }
        return .object(JSONObject([
            ("calibrated", true), ("offset_ms", .number(String(offset))), ("bound_ms", .number(String(Double(clock.bound) / 1_000_000))),
            ("source", .string(clock.source.rawValue)),
        ].map { (key: $0.0, value: $0.1) }))
    }

    /// What waits for the user's word or for another token: held deletions, edits not allowed.
    var heldLines: [String] {
        var lines: [String] = []
        if heldDeletions > 0, let heldBecause {
            lines.append("\(heldDeletions) deletions from the server are held (\(heldBecause)):")
            lines.append("  docsync resolve --deletions apply DIR moves those files to .docsync/trash; --deletions restore DIR sends them back to the server")
        } else if heldDeletions > 0 {
            lines.append("\(heldDeletions) deletions from the server wait for the rest of their pull (the guard counts the whole pull)")
        }
        if let heldLocalBecause {
            lines.append("\(heldLocalDeletions) deletions of this folder's files are held, not sent (\(heldLocalBecause)):")
            lines.append("  docsync resolve --deletions apply DIR sends them; --deletions restore DIR writes the files back")
        }
        if refusedCount > 0 {
            lines.append("\(refusedCount) documents from the server were refused, their files left as they are:")
            lines += refused.prefix(10).map { "  \($0.id): \($0.reason)" }
        }
        if notAllowedCount > 0 {
            lines.append("\(notAllowedCount) edits this token may not send (kept in their files; sent again when the file or the token changes):")
            lines += notAllowed.prefix(10).map { "  \($0.what): \($0.reason)" }
        }
        return lines
    }

    /// The human form.
    public func text(now: Int64) -> String {
        var lines = ["synced: \(counts.synced), pending: \(counts.pending), invalid: \(counts.invalid), rejected: \(counts.rejected), tombstones: \(counts.tombstones)"]
        if counts.excluded > 0 { lines.append("\(counts.excluded) files of docTypes this folder does not sync (--types, --exclude-types): not sent") }
        if let paused { lines.append("paused: \(paused)") }
        if let scanError { lines.append("scan failed, retrying: \(scanError)") }
        if let pullError { lines.append("pulling fails, retrying: \(pullError)") }
        if let pullWaiting {
            lines.append("pulled changes wait for their files (moved or changed on disk, not yet seen by the watcher), tried again with each pull: \(pullWaiting)")
        }
        lines += heldLines
        if pullFailureCount > 0 {
            lines.append("\(pullFailureCount) changes from the server could not be written into the folder; retrying:")
            lines += pullFailures.map { "  \($0.id): \($0.reason) (\($0.attempts) attempts)" }
        }
        if let line = git.line(now: now) { lines.append(line) }
        if unwatchedFolders > 0 {
            lines.append("\(unwatchedFolders) folders have no inotify watch (fs.inotify.max_user_watches reached): changes there are found by a rescan every 30 s")
        }
        if let offlineSince {
            var line = "offline since \(Timestamp(unixMilliseconds: offlineSince).rfc3339), \(counts.pending) pending"
            if let nextRetryAt { line += ", next try in \(format3(Double(max(0, nextRetryAt - RetryPolicy.deadlineNow())) / 1000)) s" }
            lines.append(line)
        }
        if let lastError, counts.pending > 0 { lines.append("last error: \(lastError)") }
        if let clock, let offset = clockOffsetMs {
            lines.append("clock: server \(offset >= 0 ? "+" : "")\(format3(offset)) ms from local, ±\(format3(Double(clock.bound) / 1_000_000)) ms (\(clock.source.rawValue))")
        } else {
            lines.append("clock: not calibrated (changes stamped with local time)")
        }
        if !invalidFiles.isEmpty {
            lines.append("invalid files:")
            lines += invalidFiles.map { "  \($0.path): \($0.reason)" }
        }
        lines += schemas.lines
        if !rejected.isEmpty {
            lines.append("rejected by the endpoint:")
            lines += rejected.map { "  \($0.path ?? $0.id): \($0.reason)" }
        }
        if !uploads.isEmpty {
            lines.append("uploads:")
            lines += uploads.map(\.text)
        }
        if !downloads.isEmpty {
            lines.append("downloads:")
            lines += downloads.map(\.text)
        }
        return lines.joined(separator: "\n")
    }
}

/// One FileUpload job as `status` shows it.
public struct UploadStatus: Sendable, Hashable {
    public var document: String
    public var property: String
    public var file: String?
    public var state: String
    public var bytesSent: Int64
    public var size: Int64?
    public var attempts: Int
    public var error: String?

    var text: String {
        var line = "  \(document) \(property)"
        if let file { line += " ← \(file)" }
        switch state {
        case "uploading": line += ": uploading, \(mebibytes(bytesSent)) of \(mebibytes(size ?? 0)) MiB sent"
        case "pending": line += ": pending" + (error.map { " (attempt \(attempts) failed: \($0))" } ?? "")
        case "failed": line += ": failed: \(error ?? "refused by the endpoint")"
        case "hashing": line += ": being hashed; uploaded once its hash is known"
        case "invalid": line += ": bad reference: \(error ?? "unusable")"
        default: line += ": \(state)"
        }
        return line
    }

    private func mebibytes(_ bytes: Int64) -> String { format3(Double(bytes) / 1_048_576) }
}

func format3(_ v: Double) -> String {
    let scaled = (v * 10).rounded() / 10
    return scaled == scaled.rounded() ? String(Int(scaled)) : String(scaled)
}
