import DocsyncFiles
import DocsyncModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The user's next index written by the agent, for the commonest commit of a trickle: paths the
/// index holds already take the new commit's objects. `git update-index --index-info` read, checked
/// and wrote the whole index in a process of its own for it: about 45 ms of each commit into a
/// folder of 100,000 files (an index of 8 MB).
///
/// It writes what `update-index` writes, read and written 64 KiB at a time:
/// - a replaced entry as `--index-info` makes it: the new mode and object, no `stat` data (git
///   looks at the file's content the next time it looks), flags of the name's length alone;
/// - the cache tree with the replaced paths' folders marked invalid (``IndexCacheTree``);
/// - every other entry as it was, but with its size smudged to 0 where git would count it as
///   racily clean against the old index's time: the new index is newer than the old, and a change
///   made in the same second as the old index must still be seen (git's racy-git rule, applied
///   to every such entry where git applies it to those whose content differs);
/// - `REUC` (the resolve-undo records) as it was;
/// - the checksum of what it wrote, once the old one is checked.
///
/// Anything else is left to `update-index` (``Outcome/leftToGit(_:)``): an index not of versions
/// 2 to 4, another extension (a split or sparse index's, the untracked cache, fsmonitor's, the
/// offset tables), an entry to replace with extended flags (skip-worktree, intent-to-add), a
/// replaced path that is a folder in the cache tree, a cache tree over ``treeHeld``, an index
/// without a checksum (`index.skipHash`) or whose checksum does not match (git says it is damaged).
enum IndexPatch {
    enum Outcome: Equatable {
        /// The new index is at the target, with this many entries replaced.
        case written(replaced: Int)
        case leftToGit(String)
    }

    /// The entries to replace: `mode sha` before and after, by path. A path whose entry is not
    /// the `old` one (the user staged something else) keeps its entry.
    typealias Changes = [String: (old: String, new: String)]

    /// The largest cache tree held to be rewritten (a folder of 1,000,000 files in 100,000
    /// folders has one of about 4 MB; one folder of 100,000 one of a few bytes).
    static let treeHeld = 1 << 20

    /// Writes to `target` (made anew) the index at `source` with `changes` made. On
    /// ``Outcome/leftToGit(_:)``, nothing is left at `target`.
    static func write(from source: String, to target: String, changes: Changes, hashSize: Int) throws(GitError) -> Outcome {
        guard let replacing = Replacements(changes, hashSize: hashSize) else { return .leftToGit("a change is not `mode hash`") }
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return .leftToGit("no index to read") }
        defer { close(input) }
        var st = stat()
        guard fstat(input, &st) == 0 else { return .leftToGit("the index cannot be read") }
        unlink(target)
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard output >= 0 else { throw GitError("cannot create \(target): \(String(cString: strerror(errno)))") }
        var patch = Patch(input: input, stream: PatchStream(fd: output, path: target, hashSize: hashSize), replacing: replacing, indexSeconds: UInt32(truncatingIfNeeded: st.st_mtim.tv_sec))
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

/// The changes as bytes, by path.
struct Replacements {
    struct Entry {
        let oldMode: UInt32, oldHash: [UInt8], newMode: UInt32, newHash: [UInt8]
    }

    let byPath: [[UInt8]: Entry]
    let filter: PathFilter

    init?(_ changes: IndexPatch.Changes, hashSize: Int) {
        var byPath: [[UInt8]: Entry] = [:]
        for (path, change) in changes {
            guard let old = Self.parse(change.old, hashSize), let new = Self.parse(change.new, hashSize) else { return nil }
            byPath[Array(path.utf8)] = Entry(oldMode: old.0, oldHash: old.1, newMode: new.0, newHash: new.1)
        }
        self.byPath = byPath
        filter = PathFilter(byPath.keys)
    }

    /// `100644 0123…` as a mode and a hash.
    private static func parse(_ entry: String, _ hashSize: Int) -> (UInt32, [UInt8])? {
        let parts = entry.split(separator: " ")
        guard parts.count == 2, let mode = UInt32(parts[0], radix: 8), let hash = Hex.decode(Array(parts[1].utf8)), hash.count == hashSize else { return nil }
        return (mode, hash)
    }
}
