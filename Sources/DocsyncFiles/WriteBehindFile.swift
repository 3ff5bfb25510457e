#if canImport(Glibc)
import Glibc
#endif
import CGlibcExtras

/// A file written front to back as its bytes arrive (a download), whose pages are sent on to the
/// disk while later ones are still coming: every ``step`` bytes, write-back of the range just
/// written is started without waiting for it. ``flush()`` (fsync) is what makes the file durable;
/// by then most of it is on disk, and the wait is for the last step, not the whole file.
public struct WriteBehindFile {
    public let fd: Int32
    public let path: String
    public private(set) var written: Int64 = 0
    private var sentOn: Int64 = 0
    /// Bytes between two starts of write-back.
    public static let step: Int64 = 8 << 20

    public init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    public mutating func write(_ chunk: UnsafeRawBufferPointer) throws(FileSystemError) {
        try FileSystem.writeAll(chunk, to: fd, path: path)
        written += Int64(chunk.count)
        if written - sentOn >= Self.step {
            // Only a hint: a file system without it (EINVAL, ENOSYS) is flushed whole at the end.
            _ = docsync_start_writeback(fd, sentOn, written - sentOn)
            sentOn = written
        }
    }

    /// Makes every byte written durable.
    public func flush() throws(FileSystemError) {
        guard fsync(fd) == 0 else { throw FileSystemError("fsync", path: path) }
    }
}
