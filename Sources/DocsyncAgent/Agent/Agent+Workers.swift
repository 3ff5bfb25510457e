import DocsyncFiles
import DocsyncIndex
import Foundation

/// A run's workers, started in one place and stopped in order: every loop of the engine is a
/// ``Worker`` (its wake signal, its stop, its backoff), the agent's own as ``LoopWorker``s.
extension Agent {
    /// Workers that run one after the other in one task (the selection's catch-up, then the
    /// pulls), stopped together.
    struct Running {
        let workers: [any Worker]
        let task: Task<Void, Never>
    }

    /// Starts every worker of a run; `restored`: the clock's estimate came from the index.
    func startWorkers(restored: Bool) -> [Running] {
        let (pusher, puller, policy) = (self.pusher, self.puller, options.retryPolicy)
        let catchUp = LoopWorker("catching up on newly selected docTypes", signal: WakeSignal(), backoff: policy, logger: logger) {
            await self.catchUpRound()
        }
        let loops: [any Worker] = [
            PullRetrier(changes: serverChanges, logger: logger),
            LoopWorker("settling stats", signal: settlerWake, backoff: policy, start: .onSignal, cancellable: true, logger: logger) {
                await self.settleRound()
            },
            LoopWorker("checking documents against a changed schema", signal: schemaCheck.changed, backoff: policy, start: .onSignal, cancellable: true, logger: logger) {
                await self.schemaRound()
            },
            LoopWorker("recording hashed files", signal: hashes.done, backoff: policy, start: .onSignal, logger: logger) { await self.hashesRound() },
            // A restored estimate is refreshed alongside the start; a new one was sampled before it.
            // A stop cancels a sample in flight: a server that never answers must not hold it.
            LoopWorker(
                "keeping the clock calibrated", signal: calibratorWake, backoff: policy, start: restored ? .now : .after(.seconds(1)), cancellable: true,
                logger: logger
            ) {
                await self.clockRound()
            },
        ]
        var running = [
            Running(workers: [pusher], task: Task {
                await pusher.run()
                // The pusher found the folder gone before sending a deletion.
                if await pusher.folderGone { self.folderWentAway() }
            }),
            Running(workers: [catchUp, puller], task: Task {
                await catchUp.run()
                await puller.run()
                // Found by the pull before (or instead of) the watcher: the agent stops as for a
                // folder the watcher saw go.
                if await puller.folderGone { self.folderWentAway() }
            }),
        ]
        let others: [any Worker] = [uploader, downloader] + (committer.map { [$0] } ?? []) + loops
        for worker in others { running.append(Running(workers: [worker], task: Task { await worker.run() })) }
        return running
    }

    /// Stops the workers in the order they were started (the pusher's round in flight is
    /// answered and recorded), then waits for each, and for a rescan in progress.
    func stopWorkers(_ running: [Running]) async {
        for worker in running.flatMap(\.workers) { await worker.stop() }
        hashes.stop()
        for run in running { await run.task.value }
        stopSignal.signal()
        await scanRetry?.value
        // A catch-up's last page may still be committing: it is in the index before the agent ends.
        await writer.settleRecords()
    }

    /// Files read within moments of a change were recorded with a stat that cannot be trusted
    /// (``FileStat/unsettled``): each is read once more when it is old enough, shortly after the
    /// batch that recorded it, so that a restart's rescan reads nothing. A save that the kernel
    /// stamped with the stat it already had is found here at the latest.
    func settleRound() async -> WorkerOutcome {
        let (index, scanner, writer) = (self.index, self.scanner, self.writer)
        // Past the 50 ms margin of the files the batch just recorded.
        try? await Task.sleep(for: .milliseconds(60))
        var after = ""
        // An index that cannot be read ends this look; the files stay unsettled in it, and the
        // next batch's wake (or the next full scan) looks again.
        while !Task.isCancelled, let unsettled = try? await index.read({ [after] in try $0.unsettledFiles(after: after, limit: Scanner.chunkSize) }),
              let last = unsettled.last {
            after = last
            do {
                let (recorded, rest) = try await scanner.lookAgain(unsettled, readyBefore: FileSystem.realtimeNanoseconds())
                if recorded.isEmpty && rest.isEmpty { continue }
                let s = try await scanner.confirmThenJudge(recorded, rest: rest) { try await writer.locked($0) }
                if s.schemasChanged { schemaCheck.changed.signal() }
                if s.queued + s.deleted > 0 {
                    logger.info("found a save that left the file's stat as it was", metadata: ["scan.queued": "\(s.queued)"])
                    pusher.wake()
                }
            } catch {
                logger.debug("settling stats failed; the next rescan reads those files", metadata: ["error": "\(error)"])
            }
        }
        return .idle(nil)
    }

    /// Keeps the estimate fresh when no traffic does: a round when it turns `clockMaxAge` old (no
    /// polling in between) asks `/api/time`. An endpoint that does not answer leaves the clock as
    /// it was; the next round asks again.
    func clockRound() async -> WorkerOutcome {
        if (clock.estimateAge ?? options.clockMaxAge) >= options.clockMaxAge {
            try? await endpoint.sampleClock()
            await saveCalibration()
        }
        let age = clock.estimateAge ?? options.clockMaxAge
        return .idle(max(options.clockMaxAge - age, .seconds(1)))
    }
}
