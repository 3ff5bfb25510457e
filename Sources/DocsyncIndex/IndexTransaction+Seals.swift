import DocsyncSQL
import GRDB

/// The version counters of an encrypted folder's documents (migration v19): the highest version
/// number sealed or opened for each document, so that a server replaying an older ciphertext
/// under a new revision is caught (docs/ENCRYPTION.md).
extension IndexTransaction {
    public func sealCounter(_ id: String) throws -> Int64 {
        // Asked for every document sealed or opened: a statement of its own site (RawStatement).
        let s = try RawStatement(self, "SELECT n FROM seal_counter WHERE id = ?")
        s.bind(1, id)
        return try s.step() ? s.int64(0) ?? 0 : 0
    }

    public func setSealCounter(_ id: String, _ n: Int64) throws {
        let s = try RawStatement(self, "INSERT INTO seal_counter (id, n) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET n = max(n, excluded.n)")
        s.bind(1, id)
        s.bind(2, n)
        try s.run()
    }
}
