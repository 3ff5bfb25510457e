/// The formats docsync can assert when asked to (`format` is only an annotation by default in
/// draft 2020-12): RFC 3339 date-time, date and time, an email address's shape, an absolute URI,
/// a UUID and an IPv4 address. Other formats stay annotations.
enum SchemaFormats {
    /// Why `text` is not of `format` (`"a date (YYYY-MM-DD)"`), or nil when it is or the format is
    /// not one docsync checks.
    static func problem(_ format: String, _ text: String) -> String? {
        let bytes = Array(text.utf8)
        let ok: Bool
        switch format {
        case "date-time": ok = isDateTime(bytes)
        case "date": ok = isDate(bytes[...])
        case "time": ok = isTime(bytes[...])
        case "email": ok = isEmail(text)
        case "uri": ok = isURI(text)
        case "uuid": ok = isUUID(bytes)
        case "ipv4": ok = isIPv4(text)
        default: return nil
        }
        guard !ok else { return nil }
        return switch format {
        case "date-time": "a date-time (RFC 3339, e.g. 2026-11-26T13:05:00Z)"
        case "date": "a date (YYYY-MM-DD)"
        case "time": "a time (RFC 3339, e.g. 13:05:00Z)"
        case "email": "an email address"
        case "uri": "an absolute URI"
        case "uuid": "a UUID"
        default: "an IPv4 address"
        }
    }

    private static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private static func isDateTime(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 20, bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t") else { return false }
        return isDate(bytes[0..<10]) && isTime(bytes[11...])
    }

    static func isDate(_ bytes: ArraySlice<UInt8>) -> Bool {
        let b = Array(bytes)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              let year = number(b[0..<4]), let month = number(b[5..<7]), let day = number(b[8..<10]),
              (1...12).contains(month), day >= 1 else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return day <= days
    }

    /// `hh:mm:ss[.frac](Z|±hh:mm)`; a leap second only at 23:59:60 UTC.
    static func isTime(_ bytes: ArraySlice<UInt8>) -> Bool {
        let b = Array(bytes)
        guard b.count >= 9, b[2] == UInt8(ascii: ":"), b[5] == UInt8(ascii: ":"),
              let hour = number(b[0..<2]), let minute = number(b[3..<5]), let second = number(b[6..<8]),
              hour < 24, minute < 60, second <= 60 else { return false }
        var i = 8
        if b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            guard i > start else { return false }
        }
        guard i < b.count else { return false }
        var offsetMinutes = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard i + 1 == b.count else { return false }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard b.count - i == 6, b[i + 3] == UInt8(ascii: ":"),
                  let h = number(b[(i + 1)..<(i + 3)]), let m = number(b[(i + 4)..<(i + 6)]), h < 24, m < 60 else { return false }
            offsetMinutes = (h * 60 + m) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
        default: return false
        }
        guard second == 60 else { return true }
        let utc = ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440
        return utc == 23 * 60 + 59
    }

    private static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last,
              !local.isEmpty, !domain.isEmpty, !local.hasPrefix("."), !local.hasSuffix("."),
              !local.contains(".."), !domain.hasPrefix("."), !domain.hasSuffix("."), !domain.contains("..") else { return false }
        return !text.contains(where: { $0 == " " || $0.isNewline })
    }

    private static func isURI(_ text: String) -> Bool {
        let uri = SchemaURI(text)
        guard uri.scheme != nil else { return false }
        return !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F || "<>\"{}|\\^`".unicodeScalars.contains($0) })
    }

    private static func isUUID(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(i) { if b != UInt8(ascii: "-") { return false }; continue }
            guard (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) else { return false }
        }
        return true
    }

    private static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            guard let n = number(Array(part.utf8)[...]), part.count <= 3 else { return false }
            return n <= 255 && (part.count == 1 || !part.hasPrefix("0"))
        }
    }
}
