/// One writer at a time in the synced tree: scans, pulled changes and merges take turns, so a
/// pulled write never races a scan of the same file.
actor TreeLock {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }

    /// `body` holding the lock, once `records` (a pull's page still being recorded) committed.
    nonisolated func run<T: Sendable>(after records: PendingRecords? = nil, _ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        await records?.settle()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }
}
