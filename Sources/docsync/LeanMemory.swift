import CGlibcExtras
import DocsyncIndex
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// With hundreds of folders in one process, gives back what idle folders keep: every `every`, each
/// index closes its reader and empties its caches (reopened and refilled on next use, a few
/// milliseconds), and the C heap returns its free pages to the system. Without it, a process that
/// synced 500 folders once keeps the high-water mark of all of them at the same time.
struct LeanMemory: Service {
    let indexes: [Index]
    var every: Duration = .seconds(30)

    func run() async throws {
        let (indexes, every) = (self.indexes, self.every)
        await cancelWhenGracefulShutdown {
            while (try? await Task.sleep(for: every)) != nil {
                for index in indexes { index.releaseMemory() }
                // The releases run on the connections' queues: give them a moment to finish.
                guard (try? await Task.sleep(for: .seconds(1))) != nil else { return }
                _ = malloc_trim(0)
            }
        }
    }
}
