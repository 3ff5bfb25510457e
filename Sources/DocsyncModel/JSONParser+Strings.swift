/// Strings: most hold no escape and are made straight from the input bytes; the rest are
/// decoded escape by escape, a surrogate pair joined and a lone surrogate refused.
extension JSONParser {
    mutating func parseString() throws(JSONSyntaxError) -> String {
        let quote = index
        index += 1
        // Most strings hold no escape: find the closing quote and make the string straight from
        // the input bytes.
        let start = index
        let (plainEnd, bitsSeen) = bytes.withUnsafeBufferPointer { buffer in
            var i = start
            var bits: UInt8 = 0
            while i < buffer.count {
                let c = buffer[i]
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 { break }
                bits |= c
                i += 1
            }
            return (i, bits)
        }
        if plainEnd < bytes.count, bytes[plainEnd] == UInt8(ascii: "\"") {
            // ASCII (nearly every key and most values) is valid UTF-8 as it stands; anything else
            // is validated.
            let decoded = bytes.withUnsafeBufferPointer { buffer in
                let text = UnsafeBufferPointer(rebasing: buffer[start..<plainEnd])
                return bitsSeen < 0x80 ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
            }
            guard let decoded else { throw error("string is not valid UTF-8", at: quote) }
            index = plainEnd + 1
            return decoded
        }
        var runStart = index
        var scalars: [UInt8] = []
        scalars.reserveCapacity(16)
        while true {
            guard index < bytes.count else { throw error("unterminated string", at: quote) }
            let c = bytes[index]
            switch c {
            case UInt8(ascii: "\""):
                scalars.append(contentsOf: bytes[runStart..<index])
                index += 1
                return try decodeUTF8(scalars, at: quote)
            case UInt8(ascii: "\\"):
                scalars.append(contentsOf: bytes[runStart..<index])
                index += 1
                try parseEscape(into: &scalars)
                runStart = index
            case 0..<0x20:
                throw error("control character U+\(hex4(UInt16(c))) must be escaped inside a string")
            default:
                index += 1
            }
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONSyntaxError) {
        guard let c = peek else { throw error("unterminated escape sequence") }
        index += 1
        switch c {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try parseHex4()
            var scalar: UInt32
            if (0xD800...0xDBFF).contains(unit) {
                guard peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw unrepresentable("lone high surrogate \\u\(hex4(unit))")
                }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw unrepresentable("invalid low surrogate \\u\(hex4(low))") }
                scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(unit) {
                throw unrepresentable("lone low surrogate \\u\(hex4(unit))")
            } else {
                scalar = UInt32(unit)
            }
            out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar)!)).utf8))
        default:
            index -= 1
            throw error("invalid escape sequence \\\(describeCurrent())")
        }
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw error("incomplete \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private func decodeUTF8(_ utf8: [UInt8], at position: Int) throws(JSONSyntaxError) -> String {
        guard let s = String(validating: utf8, as: UTF8.self) else {
            throw error("string is not valid UTF-8", at: position)
        }
        return s
    }
}
