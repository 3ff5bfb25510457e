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

/// Closes the store once the server has stopped: the application shuts its services down in the
/// reverse of their order, and this one comes before the HTTP server, so it goes last.
struct StoreCloser: Service {
    let store: any DocumentStore

    func run() async throws {
        try? await gracefulShutdown()
        await store.close()
    }
}
