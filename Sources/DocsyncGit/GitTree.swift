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
        guard let space = bytes[start...].firstIndex(of: 0x20), let nul = bytes[(space + 1)...].firstIndex(of: 0),
            nul + 1 + hashSize <= bytes.count
        else { return nil }
        return Entry(mode: start..<space, name: (space + 1)..<nul, hash: (nul + 1)..<(nul + 1 + hashSize))
    }

    static func isFolder(_ bytes: [UInt8], _ entry: Entry) -> Bool {
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

    /// The entries of `bytes` named in `names`, found in one pass.
    static func entries(named names: Set<[UInt8]>, in bytes: [UInt8], hashSize: Int) throws(GitError) -> [[UInt8]: (folder: Bool, hash: [UInt8])] {
        var found: [[UInt8]: (folder: Bool, hash: [UInt8])] = [:]
        var at = 0
        while at < bytes.count, found.count < names.count {
            guard let entry = entry(in: bytes, at: at, hashSize: hashSize) else { throw GitError("git gave a tree that cannot be read") }
            let name = Array(bytes[entry.name])
            if names.contains(name) { found[name] = (isFolder(bytes, entry), Array(bytes[entry.hash])) }
            at = entry.end
        }
        return found
    }

    /// `old` with `changes` (sorted in git's order, one per name) made, in one pass. `replaced`
    /// hears each file's entry a change met (its name, mode and hash). As in git's index, a file
    /// put where the tree has a folder of that name takes its place, and a folder a file's.
    static func merge(_ old: [UInt8], hashSize: Int, changes: [Change], replaced: (_ name: [UInt8], _ mode: [UInt8], _ hash: [UInt8]) -> Void) throws(GitError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(old.count + changes.count * (hashSize + 32))
        var next = 0
        var at = 0
        let displacing = Displacing(changes)
        while at < old.count {
            guard let entry = entry(in: old, at: at, hashSize: hashSize) else { throw GitError("git gave a tree that cannot be read") }
            let folder = isFolder(old, entry)
            while next < changes.count, order(changes[next].name, changes[next].folder, old[entry.name], folder) < 0 {
                append(changes[next], to: &out)
                next += 1
            }
            if next < changes.count, changes[next].folder == folder, changes[next].name.elementsEqual(old[entry.name]) {
                if !folder { replaced(changes[next].name, Array(old[entry.mode]), Array(old[entry.hash])) }
                append(changes[next], to: &out)
                next += 1
            } else if !displacing.displaces(old[entry.name], folder: folder) {
                out.append(contentsOf: old[at..<entry.end])
            }
            at = entry.end
        }
        while next < changes.count {
            append(changes[next], to: &out)
            next += 1
        }
        return out
    }

    private static func append(_ change: Change, to out: inout [UInt8]) {
        guard let entry = change.entry else { return }
        out.append(contentsOf: entry.mode)
        out.append(0x20)
        out.append(contentsOf: change.name)
        out.append(0)
        out.append(contentsOf: entry.hash)
    }

    /// The names changes put as a file or as a folder: an old entry of the same name and the other
    /// kind goes. They sort apart (`x` before `x-1`, `x/` after it), so they are looked up by name.
    private struct Displacing {
        var files: Set<[UInt8]> = []
        var folders: Set<[UInt8]> = []

        init(_ changes: [Change]) {
            for change in changes where change.entry != nil {
                if change.folder { folders.insert(change.name) } else { files.insert(change.name) }
            }
        }

        func displaces(_ name: ArraySlice<UInt8>, folder: Bool) -> Bool {
            let other = folder ? files : folders
            return !other.isEmpty && other.contains(Array(name))
        }
    }
}
