import DocsyncFiles
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A download's file: written as it arrives, sent on to the disk every few MiB, hashed on a
/// thread of its own that reads it back behind the writer.
@Suite struct WriteBehindTests {
    func open(_ folder: TempFolder, _ name: String) throws -> (Int32, String) {
        let path = folder.file(name)
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        return (fd, path)
    }

    /// Chunks of every size a socket gives, past several write-back steps, and none at all.
    @Test(arguments: [0, 1, 65_536, 20 << 20 + 17])
    func theHashIsTheFilesAndTheFileTheBytesSent(size: Int) throws {
        let folder = try TempFolder("write-behind")
        defer { folder.remove() }
        let (fd, path) = try open(folder, "f.part")
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { raw in
            var generator = SystemRandomNumberGenerator()
            for i in stride(from: 0, to: size - size % 8, by: 8) { raw.storeBytes(of: generator.next(), toByteOffset: i, as: UInt64.self) }
            for i in size - size % 8..<size { raw[i] = UInt8.random(in: 0...255, using: &generator) }
        }
        var file = WriteBehindFile(fd: fd, path: path)
        let hasher = TrailingHasher(fd: fd)
        var offset = 0
        while offset < size {
            let n = min(size - offset, Int.random(in: 1...300_000))
            try bytes[offset..<offset + n].withUnsafeBytes { try file.write($0) }
            hasher.written(upTo: file.written)
            offset += n
        }
        try file.flush()
        #expect(try hasher.finish() == ContentHash.sha256Hex(bytes))
        #expect(file.written == Int64(size))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
    }

    /// A file cut short under the hasher (another process truncating the temporary) is an error,
    /// not the hash of fewer bytes.
    @Test func aFileCutShortUnderTheHasherIsAnError() throws {
        let folder = try TempFolder("write-behind")
        defer { folder.remove() }
        let (fd, path) = try open(folder, "f.part")
        defer { close(fd) }
        var file = WriteBehindFile(fd: fd, path: path)
        try [UInt8](repeating: 7, count: 1000).withUnsafeBytes { try file.write($0) }
        #expect(ftruncate(fd, 10) == 0)
        let hasher = TrailingHasher(fd: fd)
        hasher.written(upTo: file.written)
        #expect(throws: FileHashError.self) { try hasher.finish() }
    }

    /// A writer that gives up (the download failed) still ends the thread: `finish` returns.
    @Test func aHasherFinishedBeforeAnyByteEnds() throws {
        let folder = try TempFolder("write-behind")
        defer { folder.remove() }
        let (fd, _) = try open(folder, "f.part")
        defer { close(fd) }
        #expect(try TrailingHasher(fd: fd).finish() == ContentHash.sha256Hex([UInt8]()))
    }
}
