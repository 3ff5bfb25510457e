/// One stored upload: its content address, length and media type.
public struct StoredBlob: Sendable, Hashable {
    public var sha256: String
    public var size: Int64
    public var contentType: String
    /// The docTypes of the documents it was attached to: a token may fetch it when it may read
    /// one of them (``Access``). Filled by ``DocumentStore/blob(sha256:)``.
    public var docTypes: Set<String>

    public init(sha256: String, size: Int64, contentType: String, docTypes: Set<String> = []) {
        self.sha256 = sha256
        self.size = size
        self.contentType = contentType
        self.docTypes = docTypes
    }

    /// Whether a token with `access` may fetch it.
    public func isReadable(by access: Access) -> Bool {
        access.readsEverything || docTypes.contains(where: access.mayRead)
    }
}
