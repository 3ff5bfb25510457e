#if canImport(Glibc)
import Glibc
#endif
import CGlibcExtras

extension FileSystem {
    /// Creates each of `files` where nothing is yet, as ``replace(_:with:ifItHolds:mode:)`` does
    /// with `expected` nil, but made durable together: every file is written to its temporary,
    /// one `syncfs` per file system flushes them all (one flush of the disk instead of one per
    /// file, which held a first pull to the disk's flush rate), then each is renamed into place
    /// unless something is there by then. Per file: whether it was created, or why it could not be.
    public static func createAll(_ files: [(file: GatedFile, bytes: [UInt8])], mode: UInt32 = 0o644) -> [Result<Bool, FileSystemError>] {
        createAll(files.map { (file: $0.file, bytes: $0.bytes, mtimeNs: nil) }, mode: mode).map { $0.map(\.created) }
    }

    /// ``createAll(_:mode:)`` giving each file the modification time `mtimeNs` (nanoseconds since
    /// 1970) where one is given. Per file: whether it was created and its stat, taken from the
    /// temporary (the rename keeps it; nil where the file system would not set a time given), or
    /// why it could not be. A save landing after the rename never passes for the file made.
    ///
    /// With `staging`, the temporaries are written there and renamed into their folders: a
    /// folder someone watches then sees each file arrive whole, in one event, instead of a
    /// temporary's creation, writes, close and rename. A file whose folder is on another file
    /// system than `staging` is written again beside its target. With several staging folders,
    /// the files are split between them and each share's temporaries are written on a thread of
    /// its own: creates in one folder queue on its lock, so each thread has its own folder.
    public static func createAll(
        _ files: [(file: GatedFile, bytes: [UInt8], mtimeNs: Int64?)], mode: UInt32 = 0o644, staging: [GatedFolder] = []
    ) -> [Result<(created: Bool, info: EntryInfo?), FileSystemError>] {
        let shares = staging.count > 1 && files.count >= 2 * staging.count ? staging.count : 1
        let temps = inShares(files.count, shares) { i, share in
            Result { () throws(FileSystemError) in
                let beside = try staging.isEmpty ? files[i].file : GatedFile(staging[share], files[i].file.name)
                return try writeTemporary(files[i].bytes, beside: beside, mode: mode, sync: false, mtimeNs: files[i].mtimeNs)
            }
        }
        let unflushed = flushAll(temps.compactMap { try? $0.get().file })
        // Renamed one at a time: renames into one folder queue on its lock (and, across folders,
        // on the file system's), so more threads only add switches.
        return files.indices.map { i in
            Result { () throws(FileSystemError) -> (created: Bool, info: EntryInfo?) in
                let (temp, info) = try temps[i].get()
                do throws(FileSystemError) {
                    return (try place(temp, at: files[i].file, flushing: unflushed), info)
                } catch {
                    guard error.code == EXDEV else { throw error }
                    return try createBeside(files[i], mode: mode)
                }
            }
        }
    }

    /// Renames `temp` to `target` unless something is there by then (flushing it first, on its
    /// own, with `flushing`); whether it was renamed. A temporary not renamed is removed.
    private static func place(_ temp: GatedFile, at target: GatedFile, flushing: Bool) throws(FileSystemError) -> Bool {
        var consumed = false
        defer { if !consumed { remove(temp) } }
        if flushing { try flush(temp) }
        consumed = try move(temp, to: target)
        return consumed
    }

    /// `temp` flushed to disk on its own.
    private static func flush(_ temp: GatedFile) throws(FileSystemError) {
        let fd = openat(temp.folder.fd, temp.name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0, fsync(fd) == 0 else {
            let e = FileSystemError("fsync", path: temp.path)
            if fd >= 0 { close(fd) }
            throw e
        }
        close(fd)
    }

    /// One file created through a temporary beside it, flushed on its own.
    private static func createBeside(
        _ file: (file: GatedFile, bytes: [UInt8], mtimeNs: Int64?), mode: UInt32
    ) throws(FileSystemError) -> (created: Bool, info: EntryInfo?) {
        let (temp, info) = try writeTemporary(file.bytes, beside: file.file, mode: mode, sync: true, mtimeNs: file.mtimeNs)
        return (try place(temp, at: file.file, flushing: false), info)
    }

    /// One flush per file system `temps` are on (looked up once per folder); true where one
    /// failed, so that each file is flushed on its own.
    private static func flushAll(_ temps: [GatedFile]) -> Bool {
        var flushed = Set<UInt64>()
        var unflushed = false
        var folders = Set<Int32>()
        for temp in temps {
            guard folders.insert(temp.folder.fd).inserted else { continue }
            var st = stat()
            guard fstat(temp.folder.fd, &st) == 0 else { unflushed = true; continue }
            let device = UInt64(st.st_dev)
            if flushed.contains(device) { continue }
            if docsync_syncfs(temp.folder.fd) == 0 { flushed.insert(device) } else { unflushed = true }
        }
        return unflushed
    }
}
