import Foundation  // MultipartStream trims header text with it

/// The streaming multipart splitter on hostile bodies: never a crash, and the parts it finds do not
/// depend on how the body was cut into chunks (the network decides that). The first byte picks the
/// chunk size.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMultipart(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let chunk = Int(data[0]) + 1
    let body = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    func split(_ step: Int) -> (events: [String], complete: Bool, failed: Bool) {
        var stream = MultipartStream(boundary: "XyZ")
        var events: [String] = []
        var content: [UInt8] = []
        var offset = 0
        do {
            while offset < body.count {
                let end = min(body.count, offset + step)
                try stream.feed(UnsafeRawBufferPointer(rebasing: body[offset..<end])) { event in
                    switch event {
                    case .headers(let h): events.append("headers \(h.sorted { $0.key < $1.key })")
                    case .body(let b): content += b
                    case .partEnd:
                        events.append("part \(content)")
                        content = []
                    }
                }
                offset = end
            }
        } catch {
            return (events, false, true)
        }
        return (events, stream.isComplete, false)
    }
    let whole = split(max(1, body.count))
    let chunked = split(chunk)
    if !whole.failed && !chunked.failed {
        precondition(whole.events == chunked.events && whole.complete == chunked.complete, "chunking changed the parts")
    }
    return 0
}
