#if canImport(Glibc)
import DocsyncStore
import Glibc
#endif

/// Notices that the database file is no longer the one the server opened: its data folder was
/// deleted (or replaced) while it ran. SQLite goes on writing to the unlinked file, every write
/// answers 200, and everything is gone at the next start; so every request checks first (one
/// `stat`, well under a microsecond) and fails with 503 and a message that says what happened.
final class StorageGuard: Sendable {
    let path: String
    private let device: UInt64
    private let inode: UInt64

    init(path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { throw StoreError(.failed, "cannot stat the database \(path)") }
        self.path = path
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    func check() throws(StoreError) {
        var st = stat()
        guard stat(path, &st) == 0, UInt64(st.st_dev) == device, UInt64(st.st_ino) == inode else {
            throw StoreError(.unavailable, "the server's storage is gone: \(path) was deleted or replaced while the server ran; nothing can be stored. Restart the server (it starts an empty store there) or restore its data folder")
        }
    }
}
