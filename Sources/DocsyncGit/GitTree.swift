#if canImport(Glibc)
import Glibc
#endif

/// A git tree object's bytes, read and changed as they are: entries `<mode> SP <name> NUL
/// <hash>`, sorted in git's order (names compared as bytes, a folder's as if it ended in `/`).
///
/// A commit of one pulled change into a folder of 100,000 documents rewrites that folder's tree
/// (4.7 MB). Made by git from an index, it cost reading and writing a scratch index of 8 MB and
/// hashing every folder of it; here the parent's tree is read once and the changed entries are
/// merged into it in one pass, the untouched entries copied as bytes.
enum GitTree {
    /// One change at a tree's level: `name` takes `entry` (its mode and binary hash), or goes
    /// (`nil`). A folder's entry is the hash of its new tree; `nil` when it is left empty.
    struct Change: Sendable {
        var name: [UInt8]
        var folder: Bool
        var entry: (mode: [UInt8], hash: [UInt8])?
    }

    /// A folder's mode in a tree.
    static let folderMode = Array("40000".utf8)

    /// One entry's parts in `bytes`, from `start`: `nil` where the tree is cut short or broken.
    struct Entry {
        var mode: Range<Int>
        var name: Range<Int>
        var hash: Range<Int>
        var end: Int { hash.upperBound }
    }

    static func entry(in bytes: [UInt8], at start: Int, hashSize: Int) -> Entry? {
        bytes.withUnsafeBufferPointer { entry(in: $0, at: start, hashSize: hashSize) }
    }

    /// The same on bytes held elsewhere (a run passed over, ``Entries/passKept(before:_:)``).
    static func entry(in all: UnsafeBufferPointer<UInt8>, at start: Int, hashSize: Int) -> Entry? {
        guard start < all.count, let base = all.baseAddress, let space = memchr(base + start, 0x20, all.count - start) else { return nil }
        let name = base.distance(to: space.assumingMemoryBound(to: UInt8.self)) + 1
        guard name <= all.count, let nul = memchr(base + name, 0, all.count - name) else { return nil }
        let end = base.distance(to: nul.assumingMemoryBound(to: UInt8.self)) + 1 + hashSize
        guard end <= all.count else { return nil }
        return Entry(mode: start..<(name - 1), name: name..<(end - 1 - hashSize), hash: (end - hashSize)..<end)
    }

    static func isFolder<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, _ entry: Entry) -> Bool where Bytes.Index == Int {
        bytes[entry.mode].elementsEqual(folderMode)
    }

    /// Git's order of two entries (`base_name_compare`): < 0 when `a` comes first.
    static func order<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ aFolder: Bool, _ b: B, _ bFolder: Bool) -> Int {
        var i = a.startIndex
        var j = b.startIndex
        while i != a.endIndex && j != b.endIndex {
            if a[i] != b[j] { return a[i] < b[j] ? -1 : 1 }
            a.formIndex(after: &i)
            b.formIndex(after: &j)
        }
        let ca: UInt8 = i != a.endIndex ? a[i] : (aFolder ? 0x2f : 0)
        let cb: UInt8 = j != b.endIndex ? b[j] : (bFolder ? 0x2f : 0)
        return ca < cb ? -1 : ca > cb ? 1 : 0
    }

    /// A tree's entries as its bytes come, a piece at a time: each whole entry in turn (its
    /// parts in ``bytes``), the part of one a piece cut kept until the next piece completes it.
    struct Entries {
        let hashSize: Int
        /// The bytes the entries ``next()`` gives are in.
        private(set) var bytes: [UInt8] = []
        private var at = 0
        /// A longer entry is not a name and a hash: the tree is broken.
        private static let longest = 1 << 20

        init(hashSize: Int) {
            self.hashSize = hashSize
        }

        /// Adds the next piece; returns how many bytes of entries already given it let go of
        /// from the start of ``bytes``.
        @discardableResult
        mutating func append(_ piece: ArraySlice<UInt8>) -> Int {
            let dropped = at
            bytes.removeSubrange(..<at)
            at = 0
            bytes.append(contentsOf: piece)
            return dropped
        }

        /// The next whole entry; `nil` when the bytes so far end before one does.
        mutating func next() throws(GitError) -> Entry? {
            guard at < bytes.count, let entry = GitTree.entry(in: bytes, at: at, hashSize: hashSize) else {
                guard bytes.count - at <= Self.longest else { throw GitError("git gave a tree that cannot be read") }
                return nil
            }
            at = entry.end
            return entry
        }

        /// Passes over the whole entries from here that sort before `change` (all of them
        /// without one) and are of a kind `displacing` takes none of, without taking each apart;
        /// the bytes passed over, in ``bytes``. A tree of 100,000 files is then a few runs.
        mutating func passKept(before change: Change?, _ displacing: Displacing) -> Range<Int> {
            let (start, hashSize) = (at, hashSize)
            at = bytes.withUnsafeBufferPointer { all in
                var at = start
                while let entry = GitTree.entry(in: all, at: at, hashSize: hashSize) {
                    let folder = isFolder(all, entry)
                    guard !displacing.mayDisplace(folder: folder) else { break }
                    if let change, order(change.name, change.folder, all[entry.name], folder) <= 0 { break }
                    at = entry.end
                }
                return at
            }
            return start..<at
        }

        /// Fails when the tree's bytes ended inside an entry.
        func finish() throws(GitError) {
            guard at == bytes.count else { throw GitError("git gave a tree that cannot be read") }
        }
    }

    /// The entries of a tree named in `names`, found in one pass as its bytes come.
    struct Finder {
        let names: Set<[UInt8]>
        private var entries: Entries
        private(set) var found: [[UInt8]: (folder: Bool, hash: [UInt8])] = [:]

        init(names: Set<[UInt8]>, hashSize: Int) {
            self.names = names
            entries = Entries(hashSize: hashSize)
        }

        mutating func feed(_ piece: ArraySlice<UInt8>) throws(GitError) {
            guard found.count < names.count else { return }
            entries.append(piece)
            while let entry = try entries.next() {
                let name = Array(entries.bytes[entry.name])
                if names.contains(name) { found[name] = (isFolder(entries.bytes, entry), Array(entries.bytes[entry.hash])) }
            }
        }
    }

    /// A tree with `changes` (sorted in git's order, one per name) made, in one pass over the old
    /// tree's bytes as they come (``feed(_:replaced:)``), the untouched entries copied as they
    /// are. As in git's index, a file put where the tree has a folder of that name takes its
    /// place, and a folder a file's.
    struct Merge {
        private let changes: [Change]
        private var next = 0
        private let displacing: Displacing
        private var entries: Entries
        /// The new tree's bytes not yet handed on (``clearOut()`` once they are).
        private(set) var out: [UInt8] = []
        /// Whether the new tree differs from the old.
        private(set) var changed = false

        init(changes: [Change], hashSize: Int) {
            self.changes = changes
            displacing = Displacing(changes)
            entries = Entries(hashSize: hashSize)
        }

        /// Merges the next piece of the old tree. `replaced` hears each file's entry a change
        /// met (its name, mode and hash).
        mutating func feed(_ piece: ArraySlice<UInt8>, replaced: (_ name: [UInt8], _ mode: [UInt8], _ hash: [UInt8]) -> Void) throws(GitError) {
            entries.append(piece)
            while true {
                // The entries kept as they are, copied in one run; the general path takes the next.
                let kept = entries.passKept(before: next < changes.count ? changes[next] : nil, displacing)
                if !kept.isEmpty { out.append(contentsOf: entries.bytes[kept]) }
                guard let entry = try entries.next() else { break }
                let old = entries.bytes
                let folder = isFolder(old, entry)
                while next < changes.count, order(changes[next].name, changes[next].folder, old[entry.name], folder) < 0 {
                    put(changes[next])
                    next += 1
                }
                if next < changes.count, changes[next].folder == folder, changes[next].name.elementsEqual(old[entry.name]) {
                    if !folder { replaced(changes[next].name, Array(old[entry.mode]), Array(old[entry.hash])) }
                    let new = changes[next].entry
                    if new.map({ !$0.mode.elementsEqual(old[entry.mode]) || !$0.hash.elementsEqual(old[entry.hash]) }) ?? true { changed = true }
                    put(changes[next], counted: false)
                    next += 1
                } else if displacing.displaces(old[entry.name], folder: folder) {
                    changed = true
                } else {
                    out.append(contentsOf: old[entry.mode.lowerBound..<entry.end])
                }
            }
        }

        /// After the old tree's last piece (or none, for a tree made from nothing): the changes
        /// that sort after its last entry.
        mutating func finish() throws(GitError) {
            try entries.finish()
            while next < changes.count {
                put(changes[next])
                next += 1
            }
        }

        /// Forgets the bytes of ``out``, handed on.
        mutating func clearOut() {
            out.removeAll(keepingCapacity: true)
        }

        private mutating func put(_ change: Change, counted: Bool = true) {
            guard let entry = change.entry else { return }
            if counted { changed = true }
            out.append(contentsOf: entry.mode)
            out.append(0x20)
            out.append(contentsOf: change.name)
            out.append(0)
            out.append(contentsOf: entry.hash)
        }
    }

    /// The names changes put as a file or as a folder: an old entry of the same name and the other
    /// kind goes. They sort apart (`x` before `x-1`, `x/` after it), so they are looked up by name.
    struct Displacing {
        var files: Set<[UInt8]> = []
        var folders: Set<[UInt8]> = []

        init(_ changes: [Change]) {
            for change in changes where change.entry != nil {
                if change.folder { folders.insert(change.name) } else { files.insert(change.name) }
            }
        }

        /// Whether an entry of this kind may be displaced (any change puts one of the other kind).
        func mayDisplace(folder: Bool) -> Bool {
            !(folder ? files : folders).isEmpty
        }

        func displaces(_ name: ArraySlice<UInt8>, folder: Bool) -> Bool {
            let other = folder ? files : folders
            return !other.isEmpty && other.contains(Array(name))
        }
    }
}
