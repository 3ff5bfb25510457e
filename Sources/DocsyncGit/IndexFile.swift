import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The user's index as the agent hands it to git to change: its identity as `stat` gives it,
/// and the scratch file `update-index` changes in its place.
enum IndexFile {
    struct Stamp: Equatable {
        var inode: UInt64, size: Int64, mtime: Int64, ctime: Int64
    }

    static func stamp(_ path: String) -> Stamp? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return stamp(st)
    }

    static func stamp(_ st: stat) -> Stamp {
        Stamp(
            inode: UInt64(st.st_ino), size: Int64(st.st_size), mtime: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
            ctime: Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec))
    }

    /// An index the agent put in place: its stamp once in place, and the checksum it ends with.
    struct Written: Equatable, Sendable {
        let stamp: Stamp
        let checksum: [UInt8]
    }

    /// The index at `path`, just put in place by the agent from `ours` (the file its lock was
    /// linked from, still there): `nil` when it is another file by now (the user's git replaced
    /// it). `ours` is removed first, as the caller would after: that changes the file's `ctime`.
    static func placed(_ path: String, from ours: String, hashSize: Int) -> Written? {
        let ourInode = stamp(ours)?.inode
        unlink(ours)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, UInt64(st.st_ino) == ourInode, Int(st.st_size) > hashSize else { return nil }
        var checksum = [UInt8](repeating: 0, count: hashSize)
        let read = checksum.withUnsafeMutableBytes { pread(fd, $0.baseAddress, hashSize, off_t(Int(st.st_size) - hashSize)) }
        return read == hashSize ? Written(stamp: stamp(st), checksum: checksum) : nil
    }

    /// Gives `target` (in the same git folder) the index at `path` as it is, for git to change;
    /// the stamp it was given with, `nil` when there is no index (git starts an empty one) or it
    /// changed meanwhile.
    ///
    /// By a hard link where it can: git never writes an index where it lies (it writes a lock
    /// and renames it over), so the `update-index` that follows puts a new file at `target` and
    /// leaves the user's as it was. A copy (8 MB at 100,000 entries) was 10 ms of every commit of
    /// a trickle. Copied where the index is not a plain file or the file system has no hard links.
    /// A link changes the index's `ctime`: ``settle(_:target:given:)`` says what it is after.
    static func give(_ path: String, to target: String) throws(GitError) -> Stamp? {
        unlink(target)
        guard let first = stamp(path) else { return nil }
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, link(path, target) == 0 {
            return stamp(target)?.inode == first.inode ? first : nil
        }
        do {
            try copy(path, to: target)
        } catch {
            if stamp(path) == nil { return nil }
            throw error
        }
        return first == stamp(path) ? first : nil
    }

    /// Once git has changed `target`: the stamp of the index at `path` the new one goes with,
    /// `nil` when it changed since ``give(_:to:)`` (`given`). A `target` git left as it was (it
    /// had nothing to write) is still the user's index itself, and is made a copy of its own: the
    /// index's lock is made from it by a link, and a lock that is the index's own file would
    /// stay behind when renamed over it.
    static func settle(_ path: String, target: String, given: Stamp?) throws(GitError) -> Stamp? {
        if let index = stamp(path), stamp(target)?.inode == index.inode {
            unlink(target)
            try copy(path, to: target)
        }
        guard let given, let now = stamp(path), now.inode == given.inode, now.size == given.size, now.mtime == given.mtime else { return nil }
        return now
    }

    /// A copy of the index at `path` as `target`, for where a link will not do.
    private static func copy(_ path: String, to target: String) throws(GitError) {
        do {
            try FileManager.default.copyItem(atPath: path, toPath: target)
        } catch {
            throw GitError("cannot copy \(path) to \(target): \(error)")
        }
    }
}

/// The index the agent put in place last, while it may still be there (see ``IndexPatch``).
final class LastWrittenIndex: Sendable {
    private let value = Mutex<IndexFile.Written?>(nil)
    var current: IndexFile.Written? { value.withLock { $0 } }
    func set(_ written: IndexFile.Written?) { value.withLock { $0 = written } }
}
