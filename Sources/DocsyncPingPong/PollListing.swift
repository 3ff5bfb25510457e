import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel

/// One docType's listing from a plain PingPong endpoint, read one document at a time: its text,
/// where each changed document lies in it, and the mark of every document listed. Only the text
/// (at most the reply cap) is held; a changed document is parsed again when its page is made.
struct PollListing: Sendable {
    /// A changed document: where it lies in the text, its values, its id and mark.
    struct Changed: Sendable {
        var range: Range<Int>
        var values: Int
        var id: String
        var mark: String
    }

    let type: String
    let bytes: [UInt8]
    private(set) var changed: [Changed] = []
    private(set) var next = 0
    /// Every listed document's mark, by id.
    private(set) var seen: [String: String] = [:]
    /// Documents of the listing no document here can be (reported alone).
    private(set) var refused: [IsolatedElement] = []

    var isDone: Bool { next == changed.count }

    /// Reads `bytes` (`{"data": […]}` or a bare list), keeping the documents whose mark differs
    /// from `committed`'s. Held to the limits of any reply: a document over a document's limits
    /// is left out alone; the text around the documents to the reply's values.
    init(type: String, bytes: [UInt8], committed: [String: String]) throws(EndpointError) {
        self.type = type
        self.bytes = bytes
        var changed: [Changed] = []
        var seen: [String: String] = [:]
        let read = try HTTPTransport.parseListing(bytes) { document, range, values in
            guard case .object(let object) = document, let id = object["id"]?.string else { return }
            let mark = PingPongEndpoint.mark(object)
            seen[id] = mark
            if committed[id] != mark { changed.append(Changed(range: range, values: values, id: id, mark: mark)) }
        }
        guard let read else { throw .badReply("the listing of docType \(type) is not JSON") }
        guard case .array? = try PingPongEndpoint.data(of: read.value) else { throw .badReply("no list under \"data\" for docType \(type)") }
        (self.changed, self.seen, self.refused) = (changed, seen, read.isolated)
    }

    /// The next changed document, counted as passed on.
    mutating func takeNext() -> Changed {
        defer { next += 1 }
        return changed[next]
    }

    /// The changed document `entry`, parsed again from the text, its docType filled in when the
    /// server left it out (a listing is of one type).
    func document(_ entry: Changed) throws(EndpointError) -> JSONObject {
        guard case .object(var document)? = try? JSONParser.parseListed(bytes, at: entry.range) else {
            throw .badReply("a document of the listing of docType \(type) no longer parses")
        }
        if document["docType"] == nil { document["docType"] = .string(type) }
        return document
    }
}

/// The page of a poll being made: the changed documents it passes on, their marks, and the
/// types whose listing it finished.
struct PollPage {
    private(set) var documents: [JSONObject] = []
    private var values = 0
    var marks: [String: [String: String]] = [:]
    var finished: [String: [String: String]] = [:]
    var refused: [IsolatedElement] = []

    /// Room for another document: fewer than a page of them, and of their values.
    var hasRoom: Bool { documents.count < PingPongEndpoint.pollPage && values < ProtocolLimits.maxPageValues }

    /// Takes documents of `listing` while there is room, and its marks when that finishes it
    /// (at once for a listing with nothing changed).
    mutating func take(from listing: inout PollListing) throws(EndpointError) {
        while hasRoom && !listing.isDone {
            let entry = listing.takeNext()
            documents.append(try listing.document(entry))
            values += entry.values
            marks[listing.type, default: [:]][entry.id] = entry.mark
        }
        if listing.isDone { finished[listing.type] = listing.seen }
    }
}
