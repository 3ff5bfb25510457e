import DocsyncIndex
import Foundation
import Synchronization

/// Hashes of referenced files too large to hash where saves are read. A 3 GiB attachment takes
/// seconds to hash; hashed inline, it held every document of its chunk (and every save after
/// them) for that long. Files over ``inlineLimit`` are hashed here instead, one at a time on a
/// thread of their own, and the documents that refer to them are looked at again once the hash
/// is known (``takeReady()``): only then is the upload queued. Meanwhile the server keeps what
/// it had for the property, and `status` says the file is being hashed.
final class BackgroundHashes: Sendable {
    /// Files up to this size are hashed inline: at most a few milliseconds.
    static let inlineLimit: Int64 = 8 << 20
    /// Hashes kept for their documents' next look; beyond this many the oldest go (hashed again
    /// if still needed, never wrong: each is bound to the stat it was taken at).
    static let kept = 256

    private struct Hashed {
        var before: FileStat
        var hash: String
        var recorded: FileStat
    }

    private struct State {
        var hashed: [String: Hashed] = [:]
        var order: [String] = []
        var requested = Set<String>()
        var ready: [String] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "docsync.hashes", qos: .utility)
    /// Told when a hash is known: its documents are due for another look.
    let done = WakeSignal()

    /// The hash of the file at `real` (an absolute path) if it was taken at stat `before`.
    func hash(of real: String, before: FileStat) -> (hash: String, stat: FileStat)? {
        state.withLock { s in
            guard let h = s.hashed[real], h.before == before else { return nil }
            return (h.hash, h.recorded)
        }
    }

    /// Hashes the file at `real` (`inside`: its path relative to the root) in the background,
    /// unless it is being hashed already.
    func request(real: String, inside: String, before: FileStat) {
        let fresh = state.withLock { s in
            guard !s.stopped else { return false }
            return s.requested.insert(real).inserted
        }
        guard fresh else { return }
        queue.async { [self] in
            let result = Self.hashIfStill(real, before: before, stopped: { self.state.withLock { $0.stopped } })
            state.withLock { s in
                s.requested.remove(real)
                guard let result else { return }
                if s.hashed.updateValue(result, forKey: real) == nil { s.order.append(real) }
                if s.order.count > Self.kept { s.hashed[s.order.removeFirst()] = nil }
                s.ready.append(inside)
            }
            if result != nil { done.signal() }
        }
    }

    /// The files whose hash became known since the last call (paths relative to the root).
    func takeReady() -> [String] {
        state.withLock { s in
            defer { s.ready = [] }
            return s.ready
        }
    }

    /// Hashes asked for and not yet taken: `sync` waits for them before it pushes.
    var isBusy: Bool { state.withLock { !$0.requested.isEmpty || !$0.ready.isEmpty } }

    /// No further hashing; one under way ends at its next piece.
    func stop() {
        state.withLock { $0.stopped = true }
        done.signal()
    }

    /// The file's hash if its stat after hashing is still `before` (a file still being written
    /// is hashed again when the watcher reports its close, as inline); `nil` otherwise.
    private static func hashIfStill(_ real: String, before: FileStat, stopped: @escaping @Sendable () -> Bool) -> Hashed? {
        guard case .success(let hashed) = Attachments.hash(real, unchangedFrom: before, while: { !stopped() }) else { return nil }
        return Hashed(before: before, hash: hashed.hash, recorded: hashed.stat)
    }
}
