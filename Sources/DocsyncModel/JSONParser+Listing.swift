/// A listing read one document at a time: what a server without pages sends (every document of
/// a type in one reply) is parsed without holding it parsed.
///
/// Held whole, a listing of 100,000 documents of 20 fields is about 140 MiB parsed, on top of its
/// text. Here each document is parsed, handed over with its place in the text and its count of
/// values, and let go: the caller keeps what it needs (a mark, the place) and parses again only
/// the documents it passes on, a page at a time (``parseListed(_:at:)``).
extension JSONParser {
    /// Parses a reply as ``parseIsolating(_:maxDepth:maxElementBytes:maxElementValues:maxValues:)``
    /// does, except that the objects of its listing (the top-level array, or the top-level
    /// object's `data` array) go to `each` (the document, its byte range, its values) instead of
    /// into the value returned, where that list is left empty. Their values are given back as each
    /// is handed over, so `maxValues` bounds what is held at once: the reply around them and one
    /// document. A document over the element limits, or one the model cannot hold, is isolated as
    /// there; a syntax error anywhere fails the whole text, as there.
    public static func parseListing(
        _ bytes: [UInt8], maxElementBytes: Int, maxElementValues: Int, maxValues: Int,
        each: (_ document: JSONValue, _ range: Range<Int>, _ values: Int) -> Void
    ) throws(JSONSyntaxError) -> (value: JSONValue, isolated: [IsolatedElement]) {
        try withoutActuallyEscaping(each) { each throws(JSONSyntaxError) in
            var parser = JSONParser(bytes: bytes)
            parser.elementByteLimit = maxElementBytes
            parser.elementValueLimit = maxElementValues
            parser.valueLimit = maxValues
            parser.isolating = true
            parser.listingSink = each
            return (try parser.parseText(), parser.isolated)
        }
    }

    /// The document at `range` of a listing ``parseListing(_:maxElementBytes:maxElementValues:maxValues:each:)``
    /// handed over, parsed again (the text is the same, so it parses as it did then).
    public static func parseListed(_ bytes: [UInt8], at range: Range<Int>) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.index = range.lowerBound
        let value = try parser.parseValue()
        guard parser.index == range.upperBound else { throw parser.error("the listed document does not end where it did") }
        return value
    }

    /// One object of the listing, parsed as an isolated element, handed over and let go.
    mutating func handOverListed() throws(JSONSyntaxError) {
        let start = index
        guard let document = try parseIsolatedElement() else { return }
        let held = values - elementValuesBefore
        values = elementValuesBefore
        listingSink?(document, start..<index, held)
    }
}
