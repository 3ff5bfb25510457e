#if canImport(Glibc)
import Glibc
#endif

/// A `multipart/form-data` body split into parts as its chunks arrive, without holding more than
/// one chunk and a delimiter's length of it: part bodies are handed on as they are found.
///
/// (We first used MultipartKit's parser; it hands binary content over in pieces that end at every
/// CR — a few hundred bytes of random data — which made uploads CPU-bound at ~150 MB/s. This one
/// searches for the delimiter with `memchr`.)
struct MultipartStream {
    enum Event {
        /// A part begins; header names are lower-cased.
        case headers([String: String])
        /// Some of the current part's content.
        case body(UnsafeRawBufferPointer)
        /// The current part is complete.
        case partEnd
    }

    struct SyntaxError: Error {}

    private enum State { case preamble, afterDelimiter, headers, body, done }

    private let delimiter: [UInt8]
    private var buffer: [UInt8]
    private var state = State.preamble
    static let maxHeaderBytes = 16 << 10

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        buffer = Array("\r\n".utf8)  // so the first boundary, at the very start, matches too
    }

    var isComplete: Bool { state == .done }

    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handle: (Event) -> Void) throws {
        buffer.append(contentsOf: bytes)
        var consumed = 0
        defer { buffer.removeFirst(consumed) }
        try buffer.withUnsafeBytes { raw in
            loop: while true {
                switch state {
                case .preamble:
                    guard let at = Self.find(delimiter, in: raw, from: consumed) else {
                        consumed = max(consumed, raw.count - delimiter.count + 1)
                        break loop
                    }
                    consumed = at + delimiter.count
                    state = .afterDelimiter
                case .afterDelimiter:
                    guard raw.count - consumed >= 2 else { break loop }
                    if raw[consumed] == UInt8(ascii: "-") && raw[consumed + 1] == UInt8(ascii: "-") {
                        consumed = raw.count
                        state = .done
                    } else if raw[consumed] == 13 && raw[consumed + 1] == 10 {
                        consumed += 2
                        state = .headers
                    } else {
                        throw SyntaxError()
                    }
                case .headers:
                    guard let end = Self.find(Array("\r\n\r\n".utf8), in: raw, from: consumed) else {
                        if raw.count - consumed > Self.maxHeaderBytes { throw SyntaxError() }
                        break loop
                    }
                    handle(.headers(Self.headers(UnsafeRawBufferPointer(rebasing: raw[consumed..<end]))))
                    consumed = end + 4
                    state = .body
                case .body:
                    if let at = Self.find(delimiter, in: raw, from: consumed) {
                        if at > consumed { handle(.body(UnsafeRawBufferPointer(rebasing: raw[consumed..<at]))) }
                        handle(.partEnd)
                        consumed = at + delimiter.count
                        state = .afterDelimiter
                    } else {
                        // Everything but a tail that could be the start of the delimiter.
                        let safe = raw.count - delimiter.count + 1
                        if safe > consumed {
                            handle(.body(UnsafeRawBufferPointer(rebasing: raw[consumed..<safe])))
                            consumed = safe
                        }
                        break loop
                    }
                case .done:
                    consumed = raw.count  // the epilogue is ignored
                    break loop
                }
            }
        }
    }

    /// The first occurrence of `needle` in `raw` at or after `from`.
    static func find(_ needle: [UInt8], in raw: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard let base = raw.baseAddress else { return nil }
        var i = from
        while i + needle.count <= raw.count {
            guard let p = memchr(base + i, Int32(needle[0]), raw.count - i - needle.count + 1) else { return nil }
            let at = UnsafeRawPointer(p) - base
            if needle.withUnsafeBytes({ memcmp(p, $0.baseAddress!, needle.count) }) == 0 { return at }
            i = at + 1
        }
        return nil
    }

    static func headers(_ raw: UnsafeRawBufferPointer) -> [String: String] {
        var out: [String: String] = [:]
        for line in String(decoding: raw, as: UTF8.self).split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            out[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return out
    }
}
