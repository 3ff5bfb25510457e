import DocsyncModel

/// The JSON parser on hostile bytes: it must never crash, and what it accepts must survive the
/// writer and parse back to the same value (the round trip every pulled or scanned document takes).
/// The isolating parse (every reply's) must agree with the strict one wherever that one accepts,
/// and whatever it keeps must be a value the strict parser accepts too.
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
    return 0
}
