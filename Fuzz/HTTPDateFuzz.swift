import DocsyncModel

/// The HTTP-date parser on hostile header text: never a crash or an overflow trap; a date it
/// accepts formats and parses back to the same second.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPDate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let seconds = HTTPDate.parse(text) else { return 0 }
    guard let again = HTTPDate.parse(HTTPDate.format(unixSeconds: seconds)), again == seconds else {
        fatalError("format/parse round trip of \(seconds) failed")
    }
    return 0
}
