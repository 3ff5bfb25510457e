import DocsyncEndpoint
import DocsyncModel

/// A second adapter for the folder's endpoint, pulled from the start: what catching up on newly
/// selected docTypes (`Agent+Selection`) and reconciling past the purge horizon (``Reconciler``)
/// both do, each with its own context and its own handling of the pages.
struct FreshPull: Sendable {
    /// Makes an adapter for the folder's endpoint (the CLI picks it by URL), and the folder's context.
    let make: @Sendable (EndpointContext) throws -> any DocumentEndpoint
    let context: EndpointContext
    /// The token in use now (the context's is the one the agent started with).
    let credential: Credential

    /// Pulls every page from the start through an adapter made from the folder's context changed by
    /// `adjust`, handing each page's documents to `page`; the folder's own cursor is not touched.
    /// Returns the cursor the last page ended at and the number of documents received.
    func pull(
        adjusting adjust: (inout EndpointContext) -> Void, page: ([JSONObject]) async throws -> Void
    ) async throws(EndpointError) -> (cursor: SyncCursor?, received: Int) {
        var context = self.context
        context.credential = credential.current
        adjust(&context)
        let endpoint: any DocumentEndpoint
        do {
            endpoint = try make(context)
        } catch {
            throw .rejected("cannot make the endpoint's adapter: \(error)")
        }
        var cursor: SyncCursor?
        var received = 0
        while true {
            let reply = try await endpoint.pull(after: cursor, wait: nil)
            do {
                try await page(reply.changes)
            } catch let error as EndpointError {
                throw error
            } catch {
                throw .localFile("applying pulled changes: \(error)")
            }
            received += reply.changes.count
            cursor = reply.cursor ?? cursor
            if !reply.more { return (cursor, received) }
        }
    }
}
