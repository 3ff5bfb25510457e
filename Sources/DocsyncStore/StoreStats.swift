/// Counts for `/api/stats`.
public struct StoreStats: Sendable {
    public var documents: Int
    public var tombstones: Int
    public var seq: Int64

    public init(documents: Int, tombstones: Int, seq: Int64) {
        self.documents = documents
        self.tombstones = tombstones
        self.seq = seq
    }
}
