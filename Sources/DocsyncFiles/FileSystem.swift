#if canImport(Glibc)
import Glibc
#endif
import CGlibcExtras
import DocsyncModel
import Foundation

/// What a stat call tells the scanner about one entry.
public struct EntryInfo: Sendable, Hashable {
    public enum Kind: Sendable { case file, directory, symlink, other }
    public var kind: Kind
    public var size: Int64
    public var mtimeNs: Int64
    public var inode: UInt64
    public var mode: UInt32

    public init(kind: Kind, size: Int64, mtimeNs: Int64, inode: UInt64, mode: UInt32) {
        self.kind = kind
        self.size = size
        self.mtimeNs = mtimeNs
        self.inode = inode
        self.mode = mode
    }

    /// A file known only from its directory entry (not `lstat`ed): no size, time or inode. A
    /// stat recorded from it matches no real file's, so a later scan reads the file again.
    public static let unknownFile = EntryInfo(kind: .file, size: 0, mtimeNs: 0, inode: 0, mode: 0)
}

/// A failed system call, with the path and the operation: what a user needs to act on it.
public struct FileSystemError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var code: Int32

    public init(_ operation: String, path: String, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var reason: String { String(cString: strerror(code)) }
    public var description: String { "\(operation) \(path): \(reason)" }
}

/// Thin, allocation-light wrappers over the POSIX calls the scanner and writer need.
public enum FileSystem {
    /// `lstat` of `path`; `nil` if it does not exist (or vanished meanwhile).
    public static func info(_ path: String) -> EntryInfo? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return EntryInfo(st)
    }

    /// Reads a whole regular file, refusing (without reading) one larger than `maxSize`. Never
    /// through a symlink, and never waiting: a FIFO put where a file was opens at once (and is
    /// refused), where a plain open would wait for a writer that may never come.
    public static func read(_ path: String, maxSize: Int) throws(DocumentProblem) -> (bytes: [UInt8], info: EntryInfo) {
        try read(opened: open(path, readFlags), maxSize: maxSize)
    }

    /// `O_NONBLOCK` changes nothing for a regular file; for a FIFO it keeps the open from waiting.
    private static let readFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK

    /// Reads a file in a gated folder (never through a symlink).
    public static func read(_ file: GatedFile, maxSize: Int) throws(DocumentProblem) -> (bytes: [UInt8], info: EntryInfo) {
        try read(opened: openat(file.folder.fd, file.name, readFlags), maxSize: maxSize)
    }

    private static func read(opened fd: Int32, maxSize: Int) throws(DocumentProblem) -> (bytes: [UInt8], info: EntryInfo) {
        guard fd >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .unreadable(String(cString: strerror(errno))) }
        let info = EntryInfo(st)
        guard info.kind == .file else { throw .unreadable("not a regular file") }
        if info.size > maxSize { throw .tooLarge(size: Int(info.size), limit: maxSize) }
        // One byte more than the size: a read that fills less than asked has met the end of the
        // file (a regular file reads short only there), so the usual file takes one read call;
        // one that grew since `fstat` fills the buffer, which then grows until a read comes up short.
        var bytes = [UInt8](repeating: 0, count: Int(info.size) + 1)
        var filled = 0
        while true {
            if filled == bytes.count { bytes.append(contentsOf: repeatElement(0, count: max(4096, bytes.count))) }
            let asked = bytes.count - filled
            let n = bytes.withUnsafeMutableBytes { buf in Glibc.read(fd, buf.baseAddress! + filled, asked) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable(String(cString: strerror(errno)))
            }
            filled += n
            if filled > maxSize { throw .tooLarge(size: filled, limit: maxSize) }
            if n < asked { break }
        }
        bytes.removeLast(bytes.count - filled)
        return (bytes, info)
    }

    /// `lstat` of a name in a gated folder; `nil` if it does not exist.
    public static func info(_ file: GatedFile) -> EntryInfo? {
        var st = stat()
        guard fstatat(file.folder.fd, file.name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return EntryInfo(st)
    }

    /// Replaces `file` with `bytes` only if it still holds exactly `expected` (or, with `expected`
    /// nil, only if nothing is there), atomically; returns false, leaving the file as it is, if
    /// someone changed, created, moved or deleted it meanwhile.
    ///
    /// Checking and then renaming would lose an edit saved in between (and an fsync makes that
    /// window milliseconds long). So the new file is swapped in (`renameat2` with
    /// `RENAME_EXCHANGE`) and what it displaced is checked afterwards: if that is not `expected`,
    /// the two are swapped back. Creating uses `RENAME_NOREPLACE`. Where the file system has
    /// neither, the check is made just before a plain rename. The mode is kept.
    public static func replace(_ file: GatedFile, with bytes: [UInt8], ifItHolds expected: [UInt8]?, mode: UInt32 = 0o644) throws(FileSystemError) -> Bool {
        try replacing(file, with: bytes, ifItHolds: expected, mode: mode) != nil
    }

    /// ``replace(_:with:ifItHolds:mode:)``, giving the stat of the file it put in place (`nil`:
    /// nothing was replaced). A record of the write takes this stat, not one taken at the path
    /// afterwards: a save landing just after the write then never passes for the write itself.
    public static func replacing(
        _ file: GatedFile, with bytes: [UInt8], ifItHolds expected: [UInt8]?, mode: UInt32 = 0o644
    ) throws(FileSystemError) -> EntryInfo? {
        let (temp, info) = try writeTemporary(bytes, beside: file, mode: mode)
        let installed = try install(
            temp, at: file, ifDisplaced: expected.map { expected in { (try? read($0, maxSize: expected.count).bytes) == expected } },
            // Someone else's save goes back, unless `file` was written again since (then that
            // newer version stays, as it would have without us).
            stillOurs: { (try? read($0, maxSize: bytes.count).bytes) == bytes })
        guard installed else { return nil }
        guard let info else { throw FileSystemError("stat", path: file.path) }
        return info
    }

    /// Moves the new file `temp` to `file`, or removes it. With `ifDisplaced` nil, only where
    /// nothing is. Otherwise `temp` is swapped in (`RENAME_EXCHANGE`) and `ifDisplaced` is asked
    /// about what it displaced: unless that is what the caller expected (a save came in between),
    /// the two are swapped back, provided `stillOurs` says `file` holds what was put there. Where
    /// the file system cannot swap, the check is made just before a plain rename.
    static func install(
        _ temp: GatedFile, at file: GatedFile, ifDisplaced expected: ((GatedFile) -> Bool)?, stillOurs: (GatedFile) -> Bool
    ) throws(FileSystemError) -> Bool {
        var consumed = false
        defer { if !consumed { remove(temp) } }
        guard let expected else {
            consumed = try move(temp, to: file)
            return consumed
        }
        let (dir, tempDir) = (file.folder.fd, temp.folder.fd)
        guard docsync_renameat2(tempDir, temp.name, dir, file.name, docsync_rename_exchange) == 0 else {
            if errno == ENOENT { return false }  // moved or deleted meanwhile
            guard errno == EINVAL || errno == ENOSYS else { throw FileSystemError("rename", path: file.path) }
            guard expected(file) else { return false }
            guard renameat(tempDir, temp.name, dir, file.name) == 0 else { throw FileSystemError("rename", path: file.path) }
            consumed = true
            return true
        }
        // `temp` now names what was at `file` an instant ago.
        if expected(temp) { return true }
        if stillOurs(file) { _ = docsync_renameat2(tempDir, temp.name, dir, file.name, docsync_rename_exchange) }
        return false
    }

    /// A hidden name for `file`'s next version while it is written (see ``isStaleTemporary(_:)``):
    /// in its folder's staging folder (``GatedFolder/staging``), else beside it.
    static func temporary(beside file: GatedFile) throws(FileSystemError) -> GatedFile {
        let suffix = ".docsync-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        // Within NAME_MAX whatever the file's name: the name is cut (on a character boundary) to fit.
        return try GatedFile(file.folder.staging ?? file.folder, "." + prefix(of: file.name, bytes: Int(NAME_MAX) - 1 - suffix.utf8.count) + suffix)
    }

    /// The longest start of `name` that is at most `bytes` long in UTF-8, cut between characters.
    public static func prefix(of name: String, bytes: Int) -> String {
        guard name.utf8.count > bytes else { return name }
        var out = ""
        var used = 0
        for character in name {
            let size = character.utf8.count
            if used + size > bytes { break }
            out.append(character)
            used += size
        }
        return out
    }

    /// ``replace(_:with:ifItHolds:mode:)`` for a path the user named (its folder opened as given).
    public static func replace(_ path: String, with bytes: [UInt8], ifItHolds expected: [UInt8]?, mode: UInt32 = 0o644) throws(FileSystemError) -> Bool {
        try replace(GatedFile.trusted(path), with: bytes, ifItHolds: expected, mode: mode)
    }

    /// Renames `from` to `to` unless something is at `to`; returns whether it moved.
    public static func move(_ from: GatedFile, to: GatedFile) throws(FileSystemError) -> Bool {
        let (a, b) = (from.folder.fd, to.folder.fd)
        if docsync_renameat2(a, from.name, b, to.name, docsync_rename_noreplace) == 0 { return true }
        if errno == EEXIST { return false }
        guard errno == EINVAL || errno == ENOSYS else { throw FileSystemError("rename", path: "\(from.path) → \(to.path)") }
        if info(to) != nil { return false }
        guard renameat(a, from.name, b, to.name) == 0 else { throw FileSystemError("rename", path: "\(from.path) → \(to.path)") }
        return true
    }

    /// Removes `file` (a file, never a folder); false if it was not there.
    @discardableResult
    public static func remove(_ file: GatedFile) -> Bool {
        unlinkat(file.folder.fd, file.name, 0) == 0
    }

    /// Writes all of `bytes` to `fd` (a short write or an interrupted call goes on where it stopped).
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String) throws(FileSystemError) {
        var written = 0
        while written < bytes.count {
            let n = write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                if errno == EINTR { continue }
                throw FileSystemError("write", path: path)
            }
            written += n
        }
    }

    /// Writes `bytes` to a new hidden file beside `file` (synced to disk, unless the caller
    /// flushes it with others) and returns it with its stat; with `mtimeNs`, the file is given that
    /// modification time first (the stat is nil where the time could not be set).
    static func writeTemporary(
        _ bytes: [UInt8], beside file: GatedFile, mode: UInt32, sync: Bool = true, mtimeNs: Int64? = nil
    ) throws(FileSystemError) -> (file: GatedFile, info: EntryInfo?) {
        let temp = try temporary(beside: file)
        let fd = openat(temp.folder.fd, temp.name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode_t(mode & 0o7777))
        guard fd >= 0 else { throw FileSystemError("create", path: temp.path) }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { buf in Result { () throws(FileSystemError) in try writeAll(buf, to: fd, path: temp.path) } }
        if case .failure(let error) = written {
            remove(temp)
            throw error
        }
        if !creationKeeps(mode) { _ = fchmod(fd, mode_t(mode & 0o7777)) }
        guard !sync || fsync(fd) == 0 else {
            let e = FileSystemError("fsync", path: temp.path)
            remove(temp)
            throw e
        }
        var st = stat()
        guard let mtimeNs else { return (temp, fstat(fd, &st) == 0 ? EntryInfo(st) : nil) }
        let omit = timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)  // UTIME_OMIT: the access time is left as it is
        let times = [omit, timespec(tv_sec: Int(mtimeNs / 1_000_000_000), tv_nsec: Int(mtimeNs % 1_000_000_000))]
        // A file system that keeps no such time (or refuses to set it) leaves the file undated.
        guard futimens(fd, times) == 0, fstat(fd, &st) == 0 else { return (temp, nil) }
        return (temp, EntryInfo(st))
    }

    /// Whether `name` is a temporary of ``replace(_:with:ifItHolds:mode:)`` whose writer is gone (killed
    /// between writing and renaming): `.<name>.docsync-<pid>-<random>.tmp` with no such process.
    public static func isStaleTemporary(_ name: String) -> Bool {
        guard name.hasPrefix("."), name.hasSuffix(".tmp"), let marker = name.range(of: ".docsync-", options: .backwards) else { return false }
        let rest = name[marker.upperBound...].dropLast(4)
        guard let pid = rest.split(separator: "-").first.flatMap({ Int32($0) }) else { return false }
        return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH
    }

    /// The wall clock, in nanoseconds since 1970: the clock file mtimes come from.
    public static func realtimeNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Creates `path` and its parents (like `mkdir -p`).
    public static func makeDirectories(_ path: String) throws(FileSystemError) {
        if let info = info(path), info.kind == .directory { return }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectories(String(path[..<slash]))
        }
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw FileSystemError("mkdir", path: path) }
    }

    /// Lists a directory's entries without stat; `nil` if it cannot be opened.
    public static func list(_ path: String) -> [DirectoryEntry]? {
        guard let dir = Directory(path) else { return nil }
        return dir.entries()
    }
}

/// One name in a folder, as `readdir` reports it.
public struct DirectoryEntry: Sendable {
    public var name: String
    /// False when the name is not valid UTF-8: `name` then shows its bytes, those that are not
    /// UTF-8 as `\xHH` and backslashes doubled, so two such names never read the same.
    public var utf8: Bool
    /// `d_type`: `DT_REG`, `DT_DIR`, … or `DT_UNKNOWN` where the file system does not say.
    public var type: UInt8

    /// `bytes` as text: valid UTF-8 as it is, each byte of an invalid sequence as `\xHH`, `\`
    /// as `\\`. One-to-one, unlike a lossy decoding (every bad byte becomes U+FFFD).
    static func escaping(_ bytes: some Collection<UInt8>) -> String {
        var out = ""
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        var rest = Array(bytes)[...]
        while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                out += scalar == "\\" ? "\\\\" : String(scalar)
                rest = rest.dropFirst(encoded.count)
            case .error(let length):
                for byte in rest.prefix(length) { out += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2) }
                rest = rest.dropFirst(length)
            case .emptyInput:
                return out
            }
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// An open folder: its entries, and `lstat` of the names in it relative to the open folder
/// (`fstatat`), so the kernel does not resolve the folder's whole path again for every file.
public final class Directory {
    private let handle: OpaquePointer

    public init?(_ path: String) {
        guard let handle = opendir(path) else { return nil }
        self.handle = handle
    }

    deinit { closedir(handle) }

    public func entries() -> [DirectoryEntry] {
        rewinddir(handle)
        return Self.entries(of: handle)
    }

    static func entries(of handle: OpaquePointer) -> [DirectoryEntry] {
        var out: [DirectoryEntry] = []
        while let entry = readdir(handle) {
            let (name, valid) = withUnsafeBytes(of: entry.pointee.d_name) { raw -> (String, Bool) in
                let bytes = raw.prefix(while: { $0 != 0 })
                if let s = String(validating: bytes, as: UTF8.self) { return (s, true) }
                return (DirectoryEntry.escaping(bytes), false)
            }
            if name == "." || name == ".." { continue }
            out.append(DirectoryEntry(name: name, utf8: valid, type: entry.pointee.d_type))
        }
        return out
    }

    /// `lstat` of `name` in this folder; `nil` if it does not exist (or vanished meanwhile).
    public func info(_ name: String) -> EntryInfo? {
        var st = stat()
        guard fstatat(dirfd(handle), name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return EntryInfo(st)
    }
}

extension EntryInfo {
    public init(_ st: stat) {
        let fmt = st.st_mode & S_IFMT
        let kind: Kind = switch fmt {
        case S_IFREG: .file
        case S_IFDIR: .directory
        case S_IFLNK: .symlink
        default: .other
        }
        self.init(
            kind: kind, size: Int64(st.st_size),
            mtimeNs: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
            inode: UInt64(st.st_ino), mode: UInt32(st.st_mode))
    }
}
