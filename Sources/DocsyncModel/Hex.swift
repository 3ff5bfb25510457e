/// Bytes as lowercase hexadecimal and back: digests, hashes of git objects, file ids. One
/// encoder and one decoder for every part (git's object names, token digests, sealed files).
public enum Hex {
    /// `bytes` as lowercase hex, written straight into the string (without a copy of the bytes
    /// where they are contiguous: a content hash is encoded for every file read).
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let done = bytes.withContiguousStorageIfAvailable({ encode(UnsafeRawBufferPointer($0)) }) { return done }
        return Array(bytes).withUnsafeBytes { encode($0) }
    }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, byte) in bytes.enumerated() {
                out[2 * i] = lowercaseHexDigit(byte >> 4)
                out[2 * i + 1] = lowercaseHexDigit(byte & 0xF)
            }
            return bytes.count * 2
        }
    }

    /// The bytes `digits` spell (either case); `nil` when they are not hex or of odd length.
    public static func decode(_ digits: some Collection<UInt8>) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = digits.startIndex
        while i != digits.endIndex {
            let j = digits.index(after: i)
            guard let high = nibble(digits[i]), let low = nibble(digits[j]) else { return nil }
            out.append(high << 4 | low)
            i = digits.index(after: j)
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
