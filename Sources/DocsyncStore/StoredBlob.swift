/// One stored upload: its content address, length and media type.
public struct StoredBlob: Sendable, Hashable {
    public var sha256: String
    public var size: Int64
    public var contentType: String

    public init(sha256: String, size: Int64, contentType: String) {
        self.sha256 = sha256
        self.size = size
        self.contentType = contentType
    }
}
