import DocsyncModel

/// The JSON parser on hostile bytes: it must never crash, and what it accepts must survive the
/// writer and parse back to the same value (the round trip every pulled or scanned document takes).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    let written = JSONWriter.bytes(value)
    guard let again = try? JSONParser.parse(written), again == value else { fatalError("round trip changed the value") }
    let pretty = JSONWriter.fileBytes(value)
    guard (try? JSONParser.parse(pretty)) == value else { fatalError("the file form changed the value") }
    if let (measured, depth) = try? JSONParser.parseMeasuringDepth(bytes, maxDepth: JSONParser.maxDepth) {
        precondition(measured == value && depth == value.containerDepth, "depth measured two ways differs")
    }
    return 0
}
