import DocsyncAgent
import Logging
import ServiceLifecycle
import Synchronization

/// Runs an ``Agent`` as a service: SIGINT/SIGTERM stop the watcher, let the push round in flight
/// finish and close the index, then the process exits.
///
/// With several folders in one process (`watch --config`), one folder's end is not the others':
/// a folder deleted under its agent, or one that fails, is logged with its name and the rest go
/// on; only when the last folder has ended does its error end the process.
public struct AgentService: Service {
    /// Makes the agent when the service starts (in `up`, once the embedded server listens);
    /// `nil` means there is nothing to run (shutdown came first).
    let make: @Sendable () async throws -> Agent?
    /// The folders of the process still running, when there are several.
    let folders: RunningFolders?
    let logger: Logger?

    public init(agent: Agent, folders: RunningFolders? = nil, logger: Logger? = nil) {
        make = { agent }
        self.folders = folders
        self.logger = logger
    }

    public init(make: @escaping @Sendable () async throws -> Agent?) {
        self.make = make
        folders = nil
        logger = nil
    }

    public func run() async throws {
        guard let agent = try await make() else { return }
        do {
            try await withGracefulShutdownHandler {
                try await agent.run()
            } onGracefulShutdown: {
                Task { await agent.stop() }
            }
        } catch {
            guard let folders, folders.leave() > 0 else { throw error }
            logger?.error("this folder stopped: \(error); the other folders go on", metadata: ["folder": "\(agent.metrics.folder)"])
            return
        }
        _ = folders?.leave()
    }
}

/// How many agents of one process are still running.
public final class RunningFolders: Sendable {
    private let count: Mutex<Int>

    public init(_ count: Int) { self.count = Mutex(count) }

    /// One has ended; how many are left.
    func leave() -> Int { count.withLock { $0 -= 1; return $0 } }
}
