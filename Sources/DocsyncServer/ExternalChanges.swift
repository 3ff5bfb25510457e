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
