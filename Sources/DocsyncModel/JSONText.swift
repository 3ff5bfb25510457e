/// What can be told of a JSON text without parsing it.
public enum JSONText {
    /// At least as many values as the JSON text holds, from one pass over its bytes: every value
    /// but the outermost comes right after a `[`, `,` or `:` outside strings (whitespace aside), so
    /// one more than those is a bound. Close for what documents hold (an object's `,` counts a key
    /// too, an empty array's `[` nothing), and cheap enough to run over every body a page sends.
    public static func valueBound(_ text: String) -> Int {
        var text = text
        return text.withUTF8 { bytes in
            var (count, inString, escaped) = (1, false, false)
            for c in bytes {
                if inString {
                    if escaped {
                        escaped = false
                    } else if c == UInt8(ascii: "\\") {
                        escaped = true
                    } else if c == UInt8(ascii: "\"") {
                        inString = false
                    }
                } else if c == UInt8(ascii: "\"") {
                    inString = true
                } else if c == UInt8(ascii: "[") || c == UInt8(ascii: ",") || c == UInt8(ascii: ":") {
                    count += 1
                }
            }
            return count
        }
    }
}
