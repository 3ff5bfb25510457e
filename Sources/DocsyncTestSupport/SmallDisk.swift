#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A real tmpfs of a few MiB mounted on a folder (needs root), for tests of a disk that fills up;
/// and a filler file that takes all its space but what a test leaves, freed again on demand.
public struct SmallDisk {
    public let path: String

    /// Mounts a tmpfs of `size` (`"3m"`, `"256k"`) on `path`; `nil` when this process may not mount.
    public init?(at path: String, size: String) {
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path]) == 0 else { return nil }
        self.path = path
    }

    /// Takes all the free space but `leaving` bytes, with a hidden file (not synced); returns its path.
    @discardableResult
    public func fill(leaving: Int, name: String = ".filler") -> String {
        let filler = path + "/" + name
        let fd = open(filler, O_WRONLY | O_CREAT, 0o644)
        let block = [UInt8](repeating: 7, count: 16 << 10)
        while write(fd, block, block.count) > 0 {}
        let size = lseek(fd, 0, SEEK_END)
        _ = ftruncate(fd, max(0, size - off_t(leaving)))
        close(fd)
        return filler
    }

    /// Frees what ``fill(leaving:name:)`` took.
    public func free(name: String = ".filler") { unlink(path + "/" + name) }

    /// Unmounts (lazily: a process may still hold a file there).
    public func unmount() { _ = Self.run("/bin/umount", ["-l", path]) }

    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
