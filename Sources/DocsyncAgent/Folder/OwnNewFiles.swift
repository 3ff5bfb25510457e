import DocsyncFiles
import DocsyncIndex
import Synchronization

/// The new files a pull just put in the folder, each with the stat its index record holds. The
/// watcher reports each of them (one event: the rename out of the staging folder), and the scan of
/// that report took the tree lock after the page's record, on the pull's path: a tenth of a first
/// pull's time went to the agent looking at its own files. A reported file that still has the
/// recorded stat is the agent's own write and is dropped from the batch before the scan
/// (``unexplained(_:root:)``); anything else is scanned as before.
///
/// Only settled stats are kept: a file dated in the past (``ChangeApplier/dated(_:before:)``), so
/// that any later write gives it another stat. At most ``limit`` entries (a report that came
/// before its page was noted leaves its entry behind): past it they are forgotten, and their
/// reports are scanned as before. Not where folders take turns (``AgentOptions/turns``): a note
/// per folder of hundreds added 25 MiB to 300 folders pulling each other's documents.
final class OwnNewFiles: Sendable {
    private let files = Mutex<[String: FileStat]>([:])
    /// Two pages' worth.
    static let limit = 2048

    /// Notes files just written, with the stats their records hold.
    func add(_ written: [(path: String, stat: FileStat)]) {
        files.withLock { files in
            if files.count + written.count > Self.limit { files.removeAll(keepingCapacity: true) }
            for (path, stat) in written where stat.isSettled { files[path] = stat }
        }
    }

    /// `paths` less the files noted here that still have the noted stat; each path looked up is
    /// forgotten (a second report of it is scanned).
    func unexplained(_ paths: Set<String>, root: String) -> Set<String> {
        files.withLock { files in
            guard !files.isEmpty else { return paths }
            return paths.filter { path in
                guard let stat = files.removeValue(forKey: path) else { return true }
                guard let info = FileSystem.info(root + "/" + path), info.kind == .file else { return true }
                return FileStat(info) != stat
            }
        }
    }

    var isEmpty: Bool { files.withLock { $0.isEmpty } }
}
