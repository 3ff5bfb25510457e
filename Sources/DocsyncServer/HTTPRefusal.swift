import DocsyncModel

/// A refusal that only HTTP has words for (no token, a body too slow, not multipart, a document
/// that fails its schema): the store knows nothing of these. Answered `{"error": …}`, with the
/// schema's violations as `errors` for a 422.
struct HTTPRefusal: Error, Sendable, CustomStringConvertible {
    var status: Int
    var message: String
    var errors: JSONValue?

    init(_ status: Int, _ message: String, errors: JSONValue? = nil) {
        self.status = status
        self.message = message
        self.errors = errors
    }

    var description: String { message }
}
