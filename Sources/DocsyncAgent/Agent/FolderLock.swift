#if canImport(Glibc)
import Glibc
#endif
import DocsyncIndex
import DocsyncFiles

/// One agent per folder: an exclusive `flock` on `.docsync/agent.lock`, held while the agent runs,
/// with the holder's pid written inside for the message a second one gets.
///
/// Two agents on one folder would race on every file ("changed while being read") and both push
/// and pull. The kernel drops the lock when the process ends, so
/// a killed agent never leaves a stale one behind.
final class FolderLock: Sendable {
    private let fd: Int32

    /// Another agent holds the folder.
    struct Held: Error, CustomStringConvertible {
        let root: String
        let holder: String?
        var description: String {
            "another docsync\(holder.map { " (pid \($0))" } ?? "") is already syncing \(root); stop it first, or use `docsync status \(root)` to see what it is doing"
        }
    }

    init(root: String) throws {
        let path = Index.stateDirectory(root: root) + "/agent.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw FileSystemError("open", path: path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var bytes = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &bytes, bytes.count, 0)
            close(fd)
            guard code == EWOULDBLOCK else { throw FileSystemError("lock", path: path, code: code) }
            let pid = n > 0 ? String(decoding: bytes[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : nil
            throw Held(root: root, holder: pid?.isEmpty == false ? pid : nil)
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.count, 0)
        self.fd = fd
    }

    deinit { close(fd) }
}

/// The folder named cannot be synced as it is, and why (the message says what to do).
public struct FolderProblem: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The folder the agent was started on is not at its path any more.
public struct RootGone: Error, CustomStringConvertible {
    public let root: String
    public var description: String {
        "the synced folder \(root) was moved away or deleted while docsync was watching it; nothing was synced from the folder now at that path. Start docsync again on the folder you mean (a new folder there starts a fresh sync)"
    }
}
