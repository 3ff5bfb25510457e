#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import DocsyncModel
import Foundation
import Synchronization

/// SHA-256 of a file being written, computed on a thread of its own that reads the file back a
/// little behind its writer (from the page cache, so no disk is read): a download is hashed on
/// the second core while the first receives and writes, instead of both in turn on one. What is
/// hashed is what the file holds, read through `fd` (opened for reading and writing).
public final class TrailingHasher: Sendable {
    private struct State {
        var written: Int64 = 0
        var finished = false
        var failure: Int32?
        var digest: String?
    }

    private let fd: Int32
    private let state = Mutex(State())
    private let more = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Starts the hashing thread for `fd`, from offset 0.
    public init(fd: Int32) {
        self.fd = fd
        let thread = Thread { [self] in self.run() }
        thread.name = "docsync-hash"
        thread.start()
    }

    /// The writer has written up to `offset`.
    public func written(upTo offset: Int64) {
        state.withLock { $0.written = offset }
        more.signal()
    }

    /// Waits for the bytes written so far to be hashed and returns their SHA-256 (lowercase hex).
    /// Throws the `errno` of a failed read. Call exactly once, also when the writer gave up.
    public func finish() throws(FileHashError) -> String {
        state.withLock { $0.finished = true }
        more.signal()
        done.wait()
        let (digest, failure) = state.withLock { ($0.digest, $0.failure) }
        if let failure { throw FileHashError(errno: failure) }
        return digest ?? ""
    }

    private func run() {
        var hasher = ContentHasher()
        var hashed: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer {
            buffer.deallocate()
            done.signal()
        }
        while true {
            let (target, finished) = state.withLock { ($0.written, $0.finished) }
            if hashed < target {
                let n = pread(fd, buffer.baseAddress, Int(min(Int64(buffer.count), target - hashed)), off_t(hashed))
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    let code = n < 0 ? errno : EIO  // a file cut short under us
                    state.withLock { $0.failure = code }
                    return
                }
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                hashed += Int64(n)
            } else if finished {
                let digest = hasher.finalize()
                state.withLock { $0.digest = digest }
                return
            } else {
                more.wait()
            }
        }
    }
}
