import DocsyncModel

/// A request the store refuses, with the HTTP status that says why.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    /// For 409: the document as currently stored.
    public var current: JSONValue?
    /// For 422 (`serve --enforce-schemas`): the schema's violations, `[{"instance", "keyword", "message"}]`.
    public var errors: JSONValue?

    public init(_ status: Int, _ message: String, current: JSONValue? = nil) {
        self.status = status
        self.message = message
        self.current = current
    }

    public var description: String { message }
}
