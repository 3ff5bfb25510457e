/// What can be told of a JSON text without parsing it.
public enum JSONText {
    /// At least as many values as a JSON text of `bytes` bytes holds, from its size alone: a value
    /// takes a byte, a container two, and values side by side a separator between them, so `n`
    /// values take at least `2n - 1` bytes.
    public static func valueBound(bytes: Int) -> Int { (bytes + 1) / 2 }

    /// At least as many values as the JSON text holds, from one pass over its bytes: every value
    /// but the outermost comes right after a `[`, `,` or `:` outside strings (whitespace aside), so
    /// one more than those is a bound, as is the bound from its size. Close for what documents
    /// hold (an object's `,` counts a key too, an empty array's `[` nothing).
    public static func valueBound(_ text: String) -> Int {
        var text = text
        let separators = text.withUTF8 { bytes in
            var (count, i) = (1, 0)
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    i = JSONParser.endOfString(bytes, from: i)
                    continue
                case UInt8(ascii: "["), UInt8(ascii: ","), UInt8(ascii: ":"): count += 1
                default: break
                }
                i += 1
            }
            return count
        }
        return min(separators, valueBound(bytes: text.utf8.count))
    }
}
