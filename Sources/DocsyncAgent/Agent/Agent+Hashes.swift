import DocsyncWatcher

/// Large referenced files are hashed in the background (``BackgroundHashes``); once a hash is
/// known, the documents that refer to the file are looked at again and its upload is queued.
extension Agent {
    /// A worker's round, each time a hash is done.
    func hashesRound() async -> WorkerOutcome {
        await scanHashed()
        return .idle(nil)
    }

    /// `sync`: the hashes its scan asked for, waited for and recorded before anything is pushed.
    func settleHashes() async {
        while hashes.isBusy && !stopRequested {
            await hashes.done.wait(timeout: .milliseconds(100))
            await scanHashed()
        }
    }

    /// A scan of the hashed files' paths, as a watcher batch: the scanner looks again at the
    /// documents that refer to a path it is given, and finds the hash waiting for the file's stat.
    private func scanHashed() async {
        let paths = hashes.takeReady()
        if !paths.isEmpty { await scan(ChangeBatch(paths: Set(paths))) }
    }
}
