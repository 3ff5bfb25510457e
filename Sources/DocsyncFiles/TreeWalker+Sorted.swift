#if canImport(Glibc)
import Glibc
#endif
import DocsyncModel

extension TreeWalker {
    /// The tree's files in the byte order of their paths: the order SQLite's BINARY collation
    /// gives the index's `path` column, so a walk and the index can be compared as a merge, a
    /// chunk at a time, whatever the size of the tree.
    ///
    /// A folder's entries are sorted as if each subfolder's name ended in `/`: `a.json` (`.` is
    /// 0x2E) comes before everything under `a/` (`/` is 0x2F), which comes before `a0.json`.
    /// What is held at once is the entries still to visit of the folders on the current path
    /// (their depth times their width) and up to 32 folders listed ahead, never the tree.
    public struct SortedWalk: Sendable {
        let walker: TreeWalker
        let removeStaleTemporaries: Bool
        let statFiles: Bool
        /// The folders being visited, outermost first; each one's entries still to visit, the
        /// next last.
        private var stack: [[Entry]] = []
        /// Folders listed ahead of their turn (see `prefetch`).
        private var listed: [String: [Entry]] = [:]
        let threads: Int
        static let prefetchFolders = 32

        enum Entry: Sendable {
            case file(Found)
            case folder(String)
        }

        init(walker: TreeWalker, relative: String, removeStaleTemporaries: Bool, statFiles: Bool, threads: Int) {
            self.walker = walker
            self.threads = threads
            self.removeStaleTemporaries = removeStaleTemporaries
            self.statFiles = statFiles
            stack = [[.folder(relative)]]
        }

        /// The next files, at most `max`; empty once the walk is done.
        public mutating func next(max: Int) -> [Found] {
            var out: [Found] = []
            while out.count < max, !stack.isEmpty {
                guard let entry = stack[stack.count - 1].popLast() else {
                    stack.removeLast()
                    continue
                }
                switch entry {
                case .file(let found): out.append(found)
                case .folder(let path):
                    if listed[path] == nil { prefetch(startingWith: path) }
                    stack.append(listed.removeValue(forKey: path) ?? [])
                }
            }
            return out
        }

        /// Lists `first` and the folders that follow it in the current folder, up to
        /// `prefetchFolders`, on `threads` threads: the stats of a whole-tree scan are most of an
        /// agent's start, and a second core halves them. What is held is bounded by the batch.
        private mutating func prefetch(startingWith first: String) {
            var batch = [first]
            if let frame = stack.last {
                for entry in frame.reversed() {
                    guard batch.count < Self.prefetchFolders else { break }
                    if case .folder(let path) = entry { batch.append(path) }
                }
            }
            let folders = batch
            let walk = self
            let results = inShares(folders.count, Swift.max(1, Swift.min(threads, folders.count))) { i, _ in walk.entries(of: folders[i]) }
            for (path, entries) in zip(batch, results) { listed[path] = entries }
        }

        /// A folder's files and subfolders, the first in path order last.
        private func entries(of folder: String) -> [Entry] {
            let listed = walker.list(folder, removeStaleTemporaries: removeStaleTemporaries, statFiles: statFiles)
            var entries: [Entry] = []
            entries.reserveCapacity(listed.files.count + listed.folders.count)
            // The sort keys' bytes side by side in one buffer: comparing two of them is a memcmp,
            // with no string or entry copied (a generic sort of (String, Entry) pairs was a
            // third of a million-file rescan's CPU).
            var bytes: [UInt8] = []
            var spans: [Span] = []
            func add(_ entry: Entry, key: String, suffix: UInt8?) {
                let start = bytes.count
                bytes.append(contentsOf: key.utf8)
                if let suffix { bytes.append(suffix) }
                spans.append(Span(start: start, count: bytes.count - start))
                entries.append(entry)
            }
            for file in listed.files { add(.file(file), key: file.path, suffix: nil) }
            for sub in listed.folders { add(.folder(sub), key: sub, suffix: UInt8(ascii: "/")) }
            var order = Array(entries.indices)
            bytes.withUnsafeBufferPointer { b in
                spans.withUnsafeBufferPointer { s in order.sort { Span.less(s[$1], s[$0], in: b) } }
            }
            return order.map { entries[$0] }
        }
    }

    /// Where one sort key lies in the shared buffer of `entries(of:)`.
    struct Span {
        var start: Int
        var count: Int

        static func less(_ a: Span, _ b: Span, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            let common = Swift.min(a.count, b.count)
            let order = common == 0 ? 0 : memcmp(bytes.baseAddress! + a.start, bytes.baseAddress! + b.start, common)
            return order != 0 ? order < 0 : a.count < b.count
        }
    }

    /// The files at or below `relative` in the byte order of their paths (see ``SortedWalk``).
    /// Without `statFiles`, a file the folder's listing calls regular is reported with a zeroed
    /// ``EntryInfo``: for a caller with no recorded stat to compare it with.
    public func sortedWalk(_ relative: String = "", removeStaleTemporaries: Bool = false, statFiles: Bool = true, threads: Int = 1) -> SortedWalk {
        SortedWalk(walker: self, relative: relative, removeStaleTemporaries: removeStaleTemporaries, statFiles: statFiles, threads: threads)
    }
}

/// Byte order of UTF-8 strings: SQLite's BINARY collation, not Swift's `<` (which orders by
/// Unicode canonical equivalence).
public func bytewiseLess(_ a: String, _ b: String) -> Bool {
    a.utf8.lexicographicallyPrecedes(b.utf8)
}
