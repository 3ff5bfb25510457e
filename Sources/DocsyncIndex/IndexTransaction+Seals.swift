import GRDB

/// The version counters of an encrypted folder's documents (migration v19): the highest version
/// number sealed or opened for each document, so that a server replaying an older ciphertext
/// under a new revision is caught (docs/ENCRYPTION.md).
extension IndexTransaction {
    public func sealCounter(_ id: String) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT n FROM seal_counter WHERE id = ?"), arguments: [id]) ?? 0
    }

    public func setSealCounter(_ id: String, _ n: Int64) throws {
        try db.cachedStatement(sql: "INSERT INTO seal_counter (id, n) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET n = max(n, excluded.n)")
            .execute(arguments: [id, n])
    }
}
