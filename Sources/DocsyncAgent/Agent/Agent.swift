import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Logging

/// The outcome of a one-shot `sync`.
public struct SyncReport: Sendable {
    public var scan: ScanSummary
    public var pending: Int
    public var invalid: Int
    public var rejected: Int
    /// Why documents are still pending, when they are.
    public var failure: String?

    public var complete: Bool { pending == 0 && rejected == 0 && failure == nil }
}

/// The sync agent: watcher → scanner → index → pusher → endpoint, for one folder.
public actor Agent {
    public let options: AgentOptions
    public let clock: ServerClock
    let logger: Logger
    /// The folder's index, opened once: handed to status, the page, the progress line and
    /// systemd, which read it instead of opening pools of their own.
    public nonisolated let index: Index
    let scanner: Scanner
    let pusher: Pusher
    let uploader: Uploader
    let downloader: Downloader
    let uploading: DocumentSet
    let puller: Puller
    /// Commits pulled changes to git, with `--git-commit` or `--git-branch`.
    let committer: GitCommitter?
    /// What the server said, taken into the folder (pulls, pushes that pull, catching up).
    let serverChanges: ServerChanges
    /// The docTypes' schemas, kept in step with their documents.
    let schemaCheck: SchemaCheck
    let applier: ChangeApplier
    let lock = TreeLock()
    /// The one writer into the folder: pulls, conflicts and downloads go through it.
    let writer: FolderWriter
    let ignore: IgnoreRules
    public nonisolated let metrics: AgentMetrics
    let endpoint: any DocumentEndpoint
    /// Makes a second adapter, for the docTypes a grown selection adds.
    let fresh: FreshPull
    var watcher: DirectoryWatcher?
    private(set) var stopRequested = false
    /// Set when a pull found the folder gone (see ``folderWentAway()``).
    var folderGone = false
    let calibratorWake = WakeSignal()
    let settlerWake = WakeSignal()
    /// Ends retry waits when the agent stops.
    let stopSignal = WakeSignal()
    /// Large referenced files, hashed away from the documents' path.
    let hashes = BackgroundHashes()
    /// Full rescans after a failed scan (see ``scanFailed(_:)``), while one is due.
    var scanRetry: Task<Void, Never>?
    var lastScanError: String?

    /// - Parameters:
    ///   - endpoint: makes the adapter for the folder's endpoint (the CLI picks it by URL).
    ///   - index: the folder's index; by default the one in its state folder, opened and checked
    ///     (tests give one in memory, ``Index/inMemory(tallyKeeper:)``).
    ///   - clock: the server clock (tests give one with a seam); by default one that logs
    ///     through `logger` (a wall-clock step, headers it does not believe).
    public init(
        options: AgentOptions, endpoint makeEndpoint: @escaping @Sendable (EndpointContext) throws -> any DocumentEndpoint, index given: Index? = nil,
        clock: ServerClock? = nil, logger: Logger
    ) throws {
        let clock = clock ?? ServerClock(logger: logger)
        let root = try Self.folder(options.root)
        var options = options
        options.root = root
        self.options = options
        self.clock = clock
        self.logger = logger
        if given != nil { try Index.makeStateDirectory(root: root) }
        let index = try given ?? Index.openChecked(root: root, footprint: options.indexFootprint)
        self.index = index
        let (ignore, metrics) = (TreeWalker.ignoreRules(root: root, extra: options.extraIgnore), AgentMetrics(folder: options.name ?? Self.defaultName(root: root)))
        (self.ignore, self.metrics) = (ignore, metrics)
        let endpointContext = EndpointContext(
            clientID: try Self.clientID(index), clock: clock, requestTimeout: options.requestTimeout, credential: options.token,
            selection: options.selection, folderTypes: Self.folderTypes(index),
            sealCounters: IndexSealCounters(index: index), longPollPage: options.longPollPage)
        let endpoint = try makeEndpoint(endpointContext)
        self.endpoint = endpoint
        // Every part is made from this, and from the signals and values made before it.
        let context = FolderContext(
            root: root, gate: try PathGate(root: root, staging: ChangeApplier.stagingFolders[0]), index: index, clock: clock, logger: logger,
            metrics: metrics, policy: options.retryPolicy, credential: Credential(token: options.token, file: options.tokenFile),
            selection: options.selection)
        let (pushWork, uploadWork) = (WakeSignal(), WakeSignal())
        let schemaCheck = SchemaCheck(context: context, changed: WakeSignal(), assertFormats: options.assertFormats)
        self.schemaCheck = schemaCheck
        let scanner = Scanner(
            context, maxFileSize: options.maxFileSize, ignore: ignore, filesPerDocument: endpoint.capabilities.filesPerDocument,
            maxUploadBytes: options.maxUploadBytes, schemas: schemaCheck.book, movePairing: options.movePairing, hashes: hashes,
            deletionGuard: options.deletionGuard) { pushWork.signal() }
        self.scanner = scanner
        let uploading = DocumentSet()
        self.uploading = uploading
        self.uploader = Uploader(context, endpoint: endpoint, uploading: uploading, signal: uploadWork, uploadEnded: { pushWork.signal() })
        let applier = Self.applier(options, context: context, scanner: scanner, endpoint: endpoint, pushWork: pushWork)
        self.applier = applier
        let (git, committer) = Self.gitHistory(options.git, context: context, maxFileSize: options.maxFileSize)
        self.committer = committer
        let writer = FolderWriter(applier: applier, lock: lock, git: git, schemas: schemaCheck)
        self.writer = writer
        let changes = ServerChanges(
            context, endpoint: endpoint, writer: writer, pushWork: pushWork, deletionGuard: options.deletionGuard, localDeletions: scanner.deletions)
        self.serverChanges = changes
        self.pusher = Pusher(context, changes: changes, signal: pushWork, uploading: uploading, uploadWork: uploadWork)
        self.downloader = Downloader(context, endpoint: endpoint, writer: writer, maxBytes: options.maxDownloadBytes, signal: applier.downloadsQueued)
        let fresh = FreshPull(make: makeEndpoint, context: endpointContext, credential: context.credential)
        self.fresh = fresh
        self.puller = Puller(
            context, changes: changes,
            reconciler: Reconciler(fresh: fresh, changes: changes),
            pollInterval: options.pollInterval, turns: options.turns)
    }

    /// What brings the server's documents into the folder (the folder writer's applier).
    static func applier(_ options: AgentOptions, context: FolderContext, scanner: Scanner, endpoint: any DocumentEndpoint, pushWork: WakeSignal) -> ChangeApplier {
        ChangeApplier(
            context: context, walker: scanner.walker, maxFileSize: options.maxFileSize,
            rescan: { path in _ = try await scanner.scan(ChangeBatch(paths: [path])) }, pushWork: pushWork, selection: context.selection,
            remoteFiles: { [endpoint] in endpoint.remoteFiles(in: $0) }, downloadsQueued: WakeSignal(),
            ownNewFiles: options.turns == nil ? OwnNewFiles() : nil,
            beforeRecording: options.beforeRecordingAPulledWrite)
    }

    /// The recorder and the committer of `--git-commit` / `--git-branch`, meeting at a signal.
    static func gitHistory(_ git: GitHistoryOptions?, context: FolderContext, maxFileSize: Int) -> (GitRecorder?, GitCommitter?) {
        guard let git else { return (nil, nil) }
        let work = WakeSignal()
        return (GitRecorder(index: context.index, committer: work), GitCommitter(context, options: git, maxFileSize: maxFileSize, signal: work))
    }

    /// The synced folder's path without trailing slashes, once it is known to be a folder.
    static func folder(_ path: String) throws -> String {
        var root = path
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        guard let info = FileSystem.info(root) else { throw FileSystemError("open folder", path: root) }
        guard info.kind != .symlink else { throw FolderProblem("\(root) is a symlink: give docsync the folder it points to") }
        guard info.kind == .directory else { throw FileSystemError("open folder", path: root, code: ENOTDIR) }
        return root
    }

    /// A folder's name when none is given: its last path component (`/` for the root).
    public static func defaultName(root: String) -> String {
        root.split(separator: "/").last.map(String.init) ?? "/"
    }

    /// Watches and pushes until ``stop()``: reconciles the tree with the index first (what changed
    /// while the agent was not running), then follows the watcher's batches.
    public func run() async throws {
        let held = try FolderLock(root: options.root)
        defer { withExtendedLifetime(held) {} }
        let (batches, restored) = try await gated { try await self.begin() }
        // A stored estimate stamps the scan's changes at once and is refreshed alongside it; only
        // a folder that never saw the endpoint waits for a first sample, and not for long.
        if !restored { await firstCalibration() }
        let running = startWorkers(restored: restored)
        do {
            try await scanAtStart()
        } catch {
            stop()
            await stopWorkers(running)
            throw error
        }
        options.onWatching?()
        pusher.wake()
        uploader.wake()
        settlerWake.signal()
        let gone = await follow(batches) || folderGone
        await stopWorkers(running)
        await saveCalibration()
        if gone { throw RootGone(root: options.root) }
    }

    /// Scans what each watcher batch names until the watcher stops; true when the folder itself
    /// went away (moved or deleted).
    private func follow(_ batches: AsyncStream<ChangeBatch>) async -> Bool {
        for await batch in batches {
            if let unwatched = batch.unwatchedFolders {
                try? await index.write { try $0.setMeta(.unwatchedFolders, unwatched == 0 ? nil : String(unwatched)) }  // `status` only
            }
            if batch.rootGone {
                stop()  // everything winds down as for a stop asked for
                return true
            }
            await scan(batch)
        }
        return false
    }

    /// `batch` less the pull's own new files that hold what was recorded (``OwnNewFiles``):
    /// nothing to look at there, and no tree lock to wait for. `nil` when nothing is left. Not
    /// while a document refers to files (one may refer to such a path, and is looked at again).
    private func withoutOwnNewFiles(_ batch: ChangeBatch) async -> ChangeBatch? {
        guard !batch.overflow, let own = applier.ownNewFiles, !own.isEmpty else { return batch }
        let rest = own.unexplained(batch.paths, root: applier.root)
        guard rest.count < batch.paths.count, (try? await index.read({ try $0.hasUploads() })) == false else { return batch }
        var left = batch
        left.paths = rest
        return left.isEmpty ? nil : left
    }

    /// Scans what `batch` names (the whole tree after an overflow) under the tree lock, and wakes
    /// whoever has work from it; a failed scan is retried in full (``scanFailed(_:)``). The
    /// watcher's batches and the documents of files hashed in the background come through here.
    func scan(_ batch: ChangeBatch) async {
        let (scanner, pusher, uploader) = (self.scanner, self.pusher, self.uploader)
        // An `rm -rf` reaches the watcher as the deletion of every file before the folder's own
        // (which an open descriptor keeps from being reported), and a folder made again at the
        // path is not the one watched: neither is scanned, and the agent stops.
        if scanner.gate.rootIsGone {
            folderWentAway()
            return
        }
        guard let batch = await withoutOwnNewFiles(batch) else { return }
        do {
            if batch.overflow { metrics.rescan("overflow") }
            var (s, recorded) = try await writer.locked {
                batch.overflow ? (try await scanner.fullScan(), []) : try await scanner.scanLeavingRecorded(batch)
            }
            // Confirmed outside the lock: a pull's writes go on meanwhile.
            s.add(try await scanner.confirmThenJudge(recorded) { try await writer.locked($0) })
            if s.queued + s.deleted > 0 { pusher.wake() }
            if s.schemasChanged { schemaCheck.changed.signal() }
            uploader.wake()
            settlerWake.signal()
            logger.debug("batch", metadata: ["scan.queued": "\(s.queued)", "scan.moved": "\(s.moved)", "scan.deleted": "\(s.deleted)"])
        } catch {
            scanFailed(error)
        }
    }

    /// Files whose recorded stat was marked unsettled are read again soon.
    func wakeSettler() {
        settlerWake.signal()
    }

    /// The synced folder was deleted or moved away (seen by a pull): ``run()`` ends with ``RootGone``.
    func folderWentAway() {
        folderGone = true
        stop()
    }

    /// SIGHUP: a new token in the token file is taken now, and what the old one was not allowed
    /// to send goes again with it.
    public func tokenFileMayHaveChanged() async {
        await pusher.takeNewToken(force: true)
        pusher.wake()
    }

    /// Asks ``run()`` to finish: the watcher stops, the push round in flight completes.
    public func stop() {
        stopRequested = true
        stopSignal.signal()
        watcher?.stop()
        calibratorWake.signal()
    }

    /// This folder's client id, made once: the endpoint does not echo this agent's writes to it.
    static func clientID(_ index: Index) throws -> String {
        try index.writeSync { tx in
            if let id = try tx.meta(.clientID) { return id }
            let id = UUID().uuidString.lowercased()
            try tx.setMeta(.clientID, id)
            return id
        }
    }

    // MARK: - Clock

    /// Restores this boot's stored calibration; true when there was one (one that cannot be read
    /// is none: the clock calibrates afresh, as after a reboot).
    func restoreCalibration() async -> Bool {
        guard let saved = try? await index.read({ try $0.meta(.clock) }), let calibration = Calibration.decode(saved) else { return false }
        clock.restore(calibration)
        return clock.isCalibrated
    }

    /// Asks `/api/time` when the estimate is missing or older than `clockMaxAge`. An unreachable
    /// endpoint leaves the clock as it was (uncalibrated: local time).
    func refreshCalibration() async {
        if (clock.estimateAge ?? .seconds(Int64.max / 2_000_000_000)) >= options.clockMaxAge {
            do throws(EndpointError) {
                try await endpoint.sampleClock()
            } catch {
                logger.debug("no clock sample from the endpoint", metadata: ["error": "\(error)"])
            }
        }
        if clock.isCalibrated {
            await saveCalibration()
        } else {
            logger.notice("clock not calibrated against the endpoint yet; stamping changes with local time")
        }
    }

    /// How long a folder that never saw the endpoint waits for its first clock sample before
    /// its first scan: a refused connect fails at once, but a server that takes connections and
    /// never answers would hold the scan for the client's read timeout (a minute).
    static let firstSampleWait = Duration.seconds(3)

    /// ``refreshCalibration()``, given up after ``firstSampleWait``: the scan's changes are then
    /// stamped with local time, and the calibrating worker goes on asking.
    func firstCalibration() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.refreshCalibration() }
            group.addTask { try? await Task.sleep(for: Self.firstSampleWait) }
            await group.next()
            group.cancelAll()
        }
    }

    func calibrateClock() async {
        _ = await restoreCalibration()
        await refreshCalibration()
    }

    func saveCalibration() async {
        guard let snapshot = clock.snapshot() else { return }
        try? await index.write { try $0.setMeta(.clock, snapshot.encoded()) }  // not kept: the next start calibrates afresh
    }

    /// Test seam: stop reading inotify events so the kernel queue overflows (see DirectoryWatcher).
    /// `false` when the watcher's thread did not act on it in time (or there is no watcher).
    @discardableResult
    package func setWatcherSuspended(_ value: Bool) -> Bool {
        watcher?.setSuspended(value) ?? false
    }
}
