/// The index records of a catch-up's page still being committed while the next page's files are
/// made: on a first pull the page's transaction (a fifth of the agent's work) then overlaps the
/// next page's names, temporaries and flush instead of following them.
///
/// The rules that keep this safe (``FolderWriter/apply(_:with:pipelined:)`` holds to them):
/// - One page at most is pending: a page's record starts once the one before it committed, so the
///   records commit in the pages' order and the memory held is one page's.
/// - Whoever else takes the tree lock (a scan of the watcher's batch, a download, a retry) waits
///   for the pending page first (``settle()``): the watcher's look at the page's files finds them
///   recorded, as before.
/// - A page that names an id or a path of the pending one (a second version of a document, a file
///   deleted at once) waits for it to commit before reading the index.
/// - What the cursor says is appended to the chain (``append(_:)``): it is stored only after the
///   pages it passes are recorded, and not at all if one of them failed.
/// - A failure is thrown to the next page or to whoever drains the chain (the puller at the end of
///   the catch-up; the agent's stop waits for it).
actor PendingRecords {
    private var link: Task<Void, any Error>?
    private var ids: Set<String> = []
    private var paths: Set<String> = []

    /// Whether a page of `ids` and `paths` touches what is pending.
    func overlaps(ids others: [String], paths otherPaths: [String] = []) -> Bool {
        guard link != nil else { return false }
        return others.contains(where: ids.contains) || otherPaths.contains(where: paths.contains)
    }

    /// Starts `record` (a page's transaction) once the pending one has committed; throws the
    /// pending one's failure instead (its page is not recorded: the puller backs off and asks
    /// again from the stored cursor, which never passed it).
    func add(ids: [String], paths: [String], _ record: @escaping @Sendable () async throws -> Void) async throws {
        try await drain()
        link = Task { try await record() }
        (self.ids, self.paths) = (Set(ids), Set(paths))
    }

    /// `work` after what is pending, and only if that succeeded; at once when nothing is.
    func append(_ work: @escaping @Sendable () async throws -> Void) async throws {
        guard let previous = link else { return try await work() }
        link = Task {
            try await previous.value
            try await work()
        }
    }

    /// Waits for what is pending and throws its failure.
    func drain() async throws {
        guard let pending = link else { return }
        defer { forget(pending) }
        try await pending.value
    }

    /// Waits for what is pending without taking its failure, which stays for ``drain()``.
    func settle() async {
        guard let pending = link else { return }
        if case .success = await pending.result { forget(pending) }
    }

    /// Clears `done` unless something was appended to it meanwhile.
    private func forget(_ done: Task<Void, any Error>) {
        guard link == done else { return }
        link = nil
        (ids, paths) = ([], [])
    }
}
