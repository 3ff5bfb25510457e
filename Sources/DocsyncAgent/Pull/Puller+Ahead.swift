import DocsyncEndpoint

/// While a catch-up writes one page, the next is already on its way: the server prepares it and
/// the reply crosses the network while this agent writes files and index rows, instead of each
/// waiting for the other. Only the reply is taken early. It is used only by a pull from the very
/// cursor it was asked from, which is the stored cursor once this page is durable; any other
/// outcome (a failure, a replaced folder, a cursor that did not move there) drops it. A reply a
/// moment old is what a pull sent then would have answered, as a slow network would deliver it.
///
/// Not when the folders of a process take turns (``Puller/turns``): the next page would wait,
/// whole, for the folder's next turn behind hundreds of others (300 folders' pages ahead held
/// over 100 MiB at once). Nor from an endpoint that says asking after a page is what tells it the
/// page was applied (``EndpointCapabilities/pagesAskedAhead``).
struct PageAhead {
    let cursor: String
    let task: Task<Result<PullReply, EndpointError>, Never>
}

extension Puller {
    /// The reply for a pull after `cursor`: the page asked ahead for that cursor, else a call now.
    func fetch(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        let early = ahead
        ahead = nil
        if let early, wait == nil, let cursor, early.cursor == cursor.text {
            return try await early.task.value.get()
        }
        early?.task.cancel()
        return try await endpoint.pull(after: cursor, wait: wait)
    }

    /// Asks for the page after `reply` now, if one is waiting and the next pull will start where
    /// `reply` ends.
    func askAhead(after reply: PullReply, sentFrom sent: SyncCursor?) {
        guard turns == nil, endpoint.capabilities.pagesAskedAhead, reply.more, !reply.missedDeletions, !reply.historyBehind, let next = reply.cursor, next.text != sent?.text else { return }
        let endpoint = self.endpoint
        ahead = PageAhead(cursor: next.text, task: Task {
            do throws(EndpointError) {
                return .success(try await endpoint.pull(after: next, wait: nil))
            } catch {
                return .failure(error)
            }
        })
    }
}
