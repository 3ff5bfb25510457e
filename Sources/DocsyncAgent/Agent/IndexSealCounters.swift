import DocsyncEndpoint
import DocsyncIndex

/// ``SealCounters`` kept in the folder's index, one transaction a batch.
struct IndexSealCounters: SealCounters {
    let index: Index

    /// Read only: a version that never reached the server (offline, refused) does not raise the
    /// count, or another agent's next version, numbered from what the server has, would look old.
    func next(_ ids: [String]) async throws -> [String: Int64] {
        try await index.read { tx in
            var numbers: [String: Int64] = [:]
            for id in ids { numbers[id] = try tx.sealCounter(id) + 1 }
            return numbers
        }
    }

    func saw(_ versions: [(id: String, number: Int64)]) async throws -> Set<String> {
        guard !versions.isEmpty else { return [] }
        return try await index.write { tx in
            var replayed = Set<String>()
            for (id, number) in versions {
                if number < (try tx.sealCounter(id)) {
                    replayed.insert(id)
                } else {
                    try tx.setSealCounter(id, number)
                }
            }
            return replayed
        }
    }
}
