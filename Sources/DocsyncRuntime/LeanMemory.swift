import CGlibcExtras
import DocsyncIndex
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// With hundreds of folders in one process, gives back what idle folders keep: every `every`, each
/// index that was not written since the last look empties its caches (its statements, pages and,
/// on a roomy index, its readers: reopened and refilled on next use, a few milliseconds), and the
/// C heap returns its free pages to the system. Folders at work keep theirs. Without it, a process
/// that synced 500 folders once keeps the high-water mark of all of them at the same time, and the
/// long polls of idle folders fill their caches again between two looks.
public struct LeanMemory: Service {
    let indexes: [Index]
    var every: Duration = .seconds(5)

    public init(indexes: [Index]) { self.indexes = indexes }

    /// Large blocks (a batch's body, a page of changes) get pages of their own, returned to the
    /// system when freed. glibc would otherwise raise this threshold to the largest block freed so
    /// far, and those blocks would then be carved from the heap, between small ones that stay.
    public static func preferMappedBlocks() {
        _ = mallopt(M_MMAP_THRESHOLD, 64 << 10)
    }

    public func run() async throws {
        let (indexes, every) = (self.indexes, self.every)
        await cancelWhenGracefulShutdown {
            var seen = indexes.map(\.writes.value)
            while (try? await Task.sleep(for: every)) != nil {
                var released = false
                for (i, index) in indexes.enumerated() {
                    let now = index.writes.value
                    if now == seen[i] {
                        await index.releaseMemory()
                        released = true
                    }
                    seen[i] = now
                }
                if released { _ = malloc_trim(0) }
            }
        }
    }
}
