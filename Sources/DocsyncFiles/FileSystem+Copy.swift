#if canImport(Glibc)
import Glibc
#endif
import CGlibcExtras

extension FileSystem {
    /// Puts a copy of `source` (a file of docsync's own, such as its download cache) at `file`:
    /// a hard link to it, or where the file system refuses one, a copy flushed to disk, made
    /// beside `file` under a hidden temporary name and renamed into place. (A link shares the
    /// bytes: the caller notices a change made through either name by its stat. Only a source
    /// with no other link is linked, so no two files of the tree ever share their bytes.)
    ///
    /// With `replacing` nil, the copy is created only where nothing is (false otherwise). With
    /// `replacing`, the copy is swapped with what is there and `replacing` is asked about the
    /// file it displaced: unless that is the version the caller expected (a save came in between),
    /// the two are swapped back and nothing changed (`nil`). Gives the stat of the file put in
    /// place, taken before it was: a record of the placement takes it, never the stat of whatever
    /// is at `file` afterwards (a save landing just after would pass for the copy).
    @discardableResult
    public static func placeCopy(of source: String, at file: GatedFile, replacing: ((GatedFile) -> Bool)? = nil) throws(FileSystemError) -> EntryInfo? {
        let temp = try temporary(beside: file)
        var st = stat()
        let alone = stat(source, &st) == 0 && st.st_nlink == 1
        if !alone || linkat(AT_FDCWD, source, temp.folder.fd, temp.name, 0) != 0 {
            guard !alone || errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP || errno == EOPNOTSUPP else {
                throw FileSystemError("link", path: temp.path)
            }
            try copy(source, to: temp)
        }
        guard let placed = info(temp) else {
            remove(temp)
            throw FileSystemError("stat", path: temp.path)
        }
        return try install(temp, at: file, ifDisplaced: replacing, stillOurs: { _ in true }) ? placed : nil
    }

    /// Copies `source` into the new file `target` (the kernel copies where it can) and flushes it.
    private static func copy(_ source: String, to target: GatedFile) throws(FileSystemError) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw FileSystemError("open", path: source) }
        defer { close(input) }
        let output = openat(target.folder.fd, target.name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard output >= 0 else { throw FileSystemError("create", path: target.path) }
        var ok = false
        defer {
            close(output)
            if !ok { remove(target) }
        }
        var inKernel = true
        var buffer: [UInt8] = []
        while true {
            if inKernel {
                let n = docsync_copy_file_range(input, output, 1 << 30)
                if n > 0 { continue }
                if n == 0 { break }
                if errno == EINTR { continue }
                guard errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP else {
                    throw FileSystemError("copy to", path: target.path)
                }
                inKernel = false
                buffer = [UInt8](repeating: 0, count: 1 << 20)
                continue
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileSystemError("read", path: source)
            }
            try buffer.withUnsafeBytes { buf in
                Result { () throws(FileSystemError) in try writeAll(UnsafeRawBufferPointer(rebasing: buf[0..<n]), to: output, path: target.path) }
            }.get()
        }
        guard fsync(output) == 0 else { throw FileSystemError("fsync", path: target.path) }
        ok = true
    }
}
