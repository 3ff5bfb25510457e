import Crypto

/// SHA-256 of a file's bytes, as lowercase hex: the index's notion of "this content".
public enum ContentHash {
    public static func sha256Hex(_ bytes: some Sequence<UInt8>) -> String {
        var hasher = SHA256()
        // Contiguous bytes (arrays, native strings' UTF-8) are hashed in place, without a copy.
        if bytes.withContiguousStorageIfAvailable({ hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }) == nil {
            hasher.update(data: Array(bytes))
        }
        return hex(hasher.finalize())
    }

    /// Lowercase hex (this runs for every file read).
    public static func hex(_ digest: some Digest) -> String {
        digest.withUnsafeBytes { Hex.encode($0) }
    }
}

/// SHA-256 fed piece by piece (files too large to hold, bytes as they are sent).
public struct ContentHasher {
    private var inner = SHA256()

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) { inner.update(bufferPointer: bytes) }

    public func finalize() -> String { ContentHash.hex(inner.finalize()) }
}

#if canImport(Glibc)
import Glibc

extension ContentHash {
    /// SHA-256 of the file at `path`, read in 256 KiB chunks (memory stays flat whatever its size),
    /// with the number of bytes hashed. Throws the `errno` of a failed open or read, and
    /// `ECANCELED` once `proceed`, asked before each chunk, says no.
    public static func sha256Hex(fileAt path: String, while proceed: () -> Bool = { true }) throws(FileHashError) -> (hash: String, size: Int64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileHashError(errno: errno) }
        defer { close(fd) }
        var hasher = ContentHasher()
        var size: Int64 = 0
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            guard proceed() else { throw FileHashError(errno: ECANCELED) }
            let n = read(fd, chunk.baseAddress, chunk.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw FileHashError(errno: errno)
            }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
            size += Int64(n)
        }
        return (hasher.finalize(), size)
    }
}

public struct FileHashError: Error, Sendable, CustomStringConvertible {
    public var errno: Int32
    public init(errno: Int32) { self.errno = errno }
    public var description: String { String(cString: strerror(errno)) }
}
#endif
