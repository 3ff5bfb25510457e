import Dispatch
import Synchronization

/// `body(i, share)` for each `i` in `0..<count`, the indices dealt out in turn to `shares`
/// threads (on the caller's thread alone for one); the results in index order. For blocking
/// file-system work that a second core shortens: a tree's listings, a pull's temporaries.
func inShares<T: Sendable>(_ count: Int, _ shares: Int, _ body: @Sendable (_ index: Int, _ share: Int) -> T) -> [T] {
    guard shares > 1 else { return (0..<count).map { body($0, 0) } }
    let results = Mutex([T?](repeating: nil, count: count))
    DispatchQueue.concurrentPerform(iterations: shares) { share in
        for i in stride(from: share, to: count, by: shares) {
            let one = body(i, share)
            results.withLock { $0[i] = one }
        }
    }
    return results.withLock { $0.map { $0! } }
}
