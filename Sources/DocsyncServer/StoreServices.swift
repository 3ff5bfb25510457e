import DocsyncModel
import DocsyncStore
import Logging
import ServiceLifecycle

/// Wakes this server's long polls for writes other servers commit to the same store (several
/// `docsync serve` on one database): the store says when, this passes it to the change feed.
struct ExternalChanges: Service {
    let store: any DocumentStore
    let feed: ChangeFeed
    let logger: Logger

    func run() async throws {
        let feed = self.feed
        try await cancelWhenGracefulShutdown {
            try await store.followExternalChanges { feed.published($0) }
        }
    }
}

/// Purges tombstones older than the retention, a few times per retention period (at most hourly,
/// at least every second). An agent whose cursor predates the purge horizon is told so by the
/// batch call's `horizon` and reconciles in full.
struct TombstonePurger: Service {
    let store: any DocumentStore
    let retention: Duration
    let wallClock: @Sendable () -> Int64
    let logger: Logger

    func run() async throws {
        let every = max(min(retention / 4, .seconds(3600)), .seconds(1))
        let retentionMs = retention.wholeMilliseconds
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let cutoff = wallClock() / 1_000_000 - retentionMs
                do {
                    let purged = try await store.purgeTombstones(deletedBefore: cutoff)
                    if purged > 0 { logger.info("purged tombstones past their retention", metadata: ["tombstones.purged": "\(purged)"]) }
                } catch {
                    logger.warning("purging tombstones failed", metadata: ["error": "\(error)"])
                }
                try await Task.sleep(for: every)
            }
        }
    }
}

/// Closes the store once the server has stopped: the application shuts its services down in the
/// reverse of their order, and this one comes before the HTTP server, so it goes last.
struct StoreCloser: Service {
    let store: any DocumentStore

    func run() async throws {
        try? await gracefulShutdown()
        await store.close()
    }
}
