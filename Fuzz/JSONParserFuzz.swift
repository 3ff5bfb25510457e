import DocsyncModel

/// The JSON parser on hostile bytes: it must never crash, and what it accepts must survive the
/// writer and parse back to the same value (the round trip every pulled or scanned document takes).
/// The isolating parse (every reply's) must agree with the strict one wherever that one accepts,
/// and whatever it keeps must be a value the strict parser accepts too. The values limits: a text
/// is never over the bounds a page is cut by, a limit of exactly its values passes and one fewer
/// stops it, and what an isolating parse keeps under an element limit is never more than the whole.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let isolating = try? JSONParser.parseIsolating(bytes)
    if let isolating {
        precondition((try? JSONParser.parse(JSONWriter.bytes(isolating.value))) == isolating.value, "an isolated parse kept a bad value")
    }
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
