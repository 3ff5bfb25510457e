import DocsyncEndpoint
import DocsyncModel

/// A second adapter for the folder's endpoint, pulled from the start: what catching up on newly
/// selected docTypes (`Agent+Selection`) and reconciling past the purge horizon (`Agent+Reconcile`)
/// both do, each with its own context and its own handling of the pages.
extension Agent {
    /// Pulls every page from the start through an adapter made from the folder's context changed by
    /// `adjust`, handing each page's documents to `page`; the folder's own cursor is not touched.
    /// Returns the cursor the last page ended at and the number of documents received.
    func pullFromStart(
        adjusting adjust: (inout EndpointContext) -> Void, page: ([JSONObject]) async throws -> Void
    ) async throws(EndpointError) -> (cursor: SyncCursor?, received: Int) {
        var context = endpointMaker.context
        adjust(&context)
        let endpoint: any DocumentEndpoint
        do {
            endpoint = try endpointMaker.make(context)
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
