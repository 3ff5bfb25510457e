import Synchronization

/// Document ids, shared between tasks: the documents whose file is being uploaded right now.
final class DocumentSet: Sendable {
    private let ids = Mutex(Set<String>())

    func insert(_ id: String) { ids.withLock { _ = $0.insert(id) } }
    func remove(_ id: String) { ids.withLock { _ = $0.remove(id) } }
    func snapshot() -> Set<String> { ids.withLock { $0 } }
}
