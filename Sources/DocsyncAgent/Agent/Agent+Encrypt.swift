import DocsyncIndex

/// `docsync encrypt init`: a folder turned to end-to-end encryption sends every document again,
/// sealed, over the revision the server has, so that no version in clear is left as the current
/// one (docs/ENCRYPTION.md).
extension Agent {
    /// Queues every document the server has to be sent again (by the next push); how many.
    public func sendAllAgain() async throws -> Int {
        let now = clock.now()
        return try await index.write { try $0.requeueAll(queuedAt: now) }
    }
}
