import DocsyncModel

/// The JSON parser on hostile bytes: it must never crash, and what it accepts must survive the
/// writer and parse back to the same value (the round trip every pulled or scanned document takes).
/// The isolating parse (every reply's) must agree with the strict one wherever that one accepts,
/// and whatever it keeps must be a value the strict parser accepts too. The values limits: a text
/// is never over the bounds a page is cut by, a limit of exactly its values passes and one fewer
/// stops it, and what an isolating parse keeps under an element limit is never more than the whole.
/// A listing read one document at a time takes what the isolating parse takes, in the same order.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let isolating = try? JSONParser.parseIsolating(bytes)
    if let isolating {
        precondition((try? JSONParser.parse(JSONWriter.bytes(isolating.value))) == isolating.value, "an isolated parse kept a bad value")
    }
    checkListing(bytes, against: isolating)
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    precondition(isolating?.value == value && isolating?.isolated.isEmpty == true, "the isolating parse differs on valid JSON")
    let written = JSONWriter.bytes(value)
    guard let again = try? JSONParser.parse(written), again == value else { fatalError("round trip changed the value") }
    let pretty = JSONWriter.fileBytes(value)
    guard (try? JSONParser.parse(pretty)) == value else { fatalError("the file form changed the value") }
    if let (measured, depth) = try? JSONParser.parseMeasuringDepth(bytes, maxDepth: JSONParser.maxDepth) {
        precondition(measured == value && depth == value.containerDepth, "depth measured two ways differs")
    }
    let values = value.valueCount
    precondition(JSONText.valueBound(String(decoding: bytes, as: UTF8.self)) >= values && JSONText.valueBound(bytes: size) >= values, "a bound under the values")
    precondition((try? JSONParser.parse(bytes, maxValues: values)) == value, "a limit of exactly its values refused it")
    precondition((try? JSONParser.parse(bytes, maxValues: values - 1)) == nil, "a limit under its values let it through")
    precondition((try? JSONParser.parseIsolating(bytes, maxElementValues: 4, maxValues: values)) != nil, "kept more than the whole")
    return 0
}

/// The listing parse accepts what the isolating parse accepts; the documents it hands over are
/// the objects of the listing's list there, in order, each parsed again to the same from its
/// range; the list it leaves holds the rest.
func checkListing(_ bytes: [UInt8], against isolating: (value: JSONValue, isolated: [IsolatedElement])?) {
    var handed: [JSONValue] = []
    let listing = try? JSONParser.parseListing(bytes, maxElementBytes: .max, maxElementValues: .max, maxValues: .max) { document, range, _ in
        precondition((try? JSONParser.parseListed(bytes, at: range)) == document, "a listed document parsed again differs")
        handed.append(document)
    }
    precondition((listing == nil) == (isolating == nil), "the listing and the isolating parse disagree on whether the text parses")
    guard let listing, let isolating else { return }
    precondition(listing.isolated == isolating.isolated, "the listing isolated other documents")
    let whole = listedList(isolating.value)
    let objects = whole.filter { if case .object = $0 { true } else { false } }
    precondition(handed == objects, "the documents handed over are not the listing's objects")
    precondition(listedList(listing.value) == whole.filter { if case .object = $0 { false } else { true } }, "the list left is not the rest")
}

/// The listing's list: the top-level array, or the top-level object's `data` array.
func listedList(_ value: JSONValue) -> [JSONValue] {
    if case .array(let items) = value { return items }
    if case .array(let items)? = value.object?["data"] { return items }
    return []
}
