import DocsyncFiles
import DocsyncModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The user's next index written by the agent, for the commits of a trickle: paths the index
/// holds take the new commit's objects, new paths are added, removed ones go. `git update-index
/// --index-info` read, checked and wrote the whole index in a process of its own for it: about
/// 45 ms of each commit into a folder of 100,000 files (an index of 8 MB).
///
/// It writes what `update-index` writes, read and written 64 KiB at a time:
/// - a replaced or added entry as `--index-info` makes it: the new mode and object, no `stat`
///   data (git looks at the file's content the next time it looks), flags of the name's length
///   alone; an added one where git's order puts it, a removed one left out, and the count in the
///   header changed to match;
/// - in version 4, the name of the entry after one added or removed written again against the
///   name now before it (version 4 keeps of each name what differs from the last);
/// - the cache tree with the changed paths' folders marked invalid (``IndexCacheTree``);
/// - every other entry as it was, but with its size smudged to 0 where git would count it as
///   racily clean against the old index's time: the new index is newer than the old, and a change
///   made in the same second as the old index must still be seen (git's racy-git rule, applied
///   to every such entry where git applies it to those whose content differs);
/// - `REUC` (the resolve-undo records) as it was;
/// - the checksum of what it wrote, once the old one is checked: by hashing it, or, while the
///   index is still the file the agent put there last (`known`: same inode, size, times), by
///   comparing its last bytes with the checksum the agent wrote there. Hashing an index the
///   agent wrote itself was half of the hashing of a commit that adds or removes a path (8 MB
///   at 100,000 files); git checks an index's checksum only in `fsck`.
///
/// Anything else is left to `update-index` (``Outcome/leftToGit(_:)``): an index not of versions
/// 2 to 4, another extension (a split or sparse index's, the untracked cache, fsmonitor's, the
/// offset tables), an entry to replace or remove with extended flags (skip-worktree,
/// intent-to-add), a path to add that the index holds in any form or that is a folder of an
/// entry (or has one as a folder: git's rules for a file replacing a folder are git's), a path to
/// remove that the user staged otherwise or removed, a path to add git might refuse, a changed
/// path that is a folder in the cache tree, a cache tree over ``treeHeld``, an index without a
/// checksum (`index.skipHash`) or whose checksum does not match (git says it is damaged).
enum IndexPatch {
    enum Outcome: Equatable {
        /// The new index is at the target, with this many entries replaced, added or removed.
        case written(changed: Int)
        case leftToGit(String)
    }

    /// The changes: `mode sha` before and after, by path; `nil` before for a path the commit
    /// adds, after for one it removes. A path whose entry is not the `old` one (the user staged
    /// something else) keeps its entry when it is replaced; when it is added or removed, the
    /// index is left to git.
    typealias Changes = [String: (old: String?, new: String?)]

    /// The largest cache tree held to be rewritten (a folder of 1,000,000 files in 100,000
    /// folders has one of about 4 MB; one folder of 100,000 one of a few bytes).
    static let treeHeld = 1 << 20

    /// Writes to `target` (made anew) the index at `source` with `changes` made. On
    /// ``Outcome/leftToGit(_:)``, nothing is left at `target`.
    static func write(from source: String, to target: String, changes: Changes, hashSize: Int, known: IndexFile.Written? = nil) throws(GitError) -> Outcome {
        let edits: IndexEdits
        do {
            edits = try IndexEdits(changes, hashSize: hashSize)
        } catch {
            return .leftToGit(error.why)
        }
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return .leftToGit("no index to read") }
        defer { close(input) }
        var st = stat()
        guard fstat(input, &st) == 0 else { return .leftToGit("the index cannot be read") }
        unlink(target)
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard output >= 0 else { throw GitError("cannot create \(target): \(String(cString: strerror(errno)))") }
        let ours = known.flatMap { $0.stamp == IndexFile.stamp(st) ? $0.checksum : nil }
        var patch = Patch(
            input: input, stream: PatchStream(fd: output, path: target, hashSize: hashSize, knownChecksum: ours), edits: edits,
            indexSeconds: UInt32(truncatingIfNeeded: st.st_mtim.tv_sec))
        let outcome: Outcome
        do {
            outcome = try patch.run()
        } catch {
            close(output)
            unlink(target)
            throw error
        }
        close(output)
        if case .leftToGit = outcome { unlink(target) }
        return outcome
    }
}

/// The changes as bytes: the entries to replace or remove, by path, and the paths to add, in
/// the index's order.
struct IndexEdits {
    struct Entry {
        let mode: UInt32, hash: [UInt8]
    }

    /// Why the changes are left to git before the index is read.
    struct Refusal: Error {
        let why: String
    }

    /// A path the index holds: its entry before, and after (`nil`: removed).
    let byPath: [[UInt8]: (old: Entry, new: Entry?)]
    let filter: PathFilter
    /// Paths to add, sorted as the index sorts its entries (by their bytes).
    let added: [(path: [UInt8], entry: Entry)]
    let removals: Int

    init(_ changes: IndexPatch.Changes, hashSize: Int) throws(Refusal) {
        var byPath: [[UInt8]: (old: Entry, new: Entry?)] = [:]
        var added: [(path: [UInt8], entry: Entry)] = []
        for (path, change) in changes {
            let new = try change.new.map { text throws(Refusal) in try Self.parse(text, hashSize) }
            guard let oldText = change.old else {
                guard let new else { continue }  // neither before nor after: nothing to do
                guard new.mode == 0o100644 || new.mode == 0o100755 else { throw Refusal(why: "\(path) is added as mode \(String(new.mode, radix: 8))") }
                guard Self.isPlain(path) else { throw Refusal(why: "\(path) is a path git may refuse to add") }
                added.append((Array(path.utf8), new))
                continue
            }
            byPath[Array(path.utf8)] = (try Self.parse(oldText, hashSize), new)
        }
        added.sort { $0.path.lexicographicallyPrecedes($1.path) }
        let addedPaths = Set(added.map(\.path))
        for (path, _) in added where IndexCacheTree.folders(above: path).contains(where: addedPaths.contains) {
            throw Refusal(why: "\(String(decoding: path, as: UTF8.self)) is added under a file also added")
        }
        self.byPath = byPath
        self.added = added
        removals = byPath.values.filter { $0.new == nil }.count
        filter = PathFilter(byPath.keys)
    }

    /// `100644 0123…` as a mode and a hash.
    private static func parse(_ entry: String, _ hashSize: Int) throws(Refusal) -> Entry {
        let parts = entry.split(separator: " ")
        guard parts.count == 2, let mode = UInt32(parts[0], radix: 8), let hash = Hex.decode(Array(parts[1].utf8)), hash.count == hashSize else {
            throw Refusal(why: "a change is not `mode hash`")
        }
        return Entry(mode: mode, hash: hash)
    }

    /// A path every git accepts as it is: names of ASCII letters, digits and `-_.+@=,` that
    /// neither start nor end with a dot, the whole shorter than 4,095 bytes, whose length an
    /// entry's flags hold (git's `verify_path` refuses `.git` and its spellings on other file
    /// systems, `.` and `..`, and empty names; whatever else it allows goes to git).
    static func isPlain(_ path: String) -> Bool {
        guard !path.isEmpty, path.utf8.count < 0xfff else { return false }
        return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { name in
            guard let first = name.utf8.first, let last = name.utf8.last, first != UInt8(ascii: "."), last != UInt8(ascii: ".") else { return false }
            return name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                default: "-_.+@=,".utf8.contains(byte)
                }
            }
        }
    }
}
