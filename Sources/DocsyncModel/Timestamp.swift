/// A point in time as Unix milliseconds, written RFC 3339 UTC with milliseconds
/// (`2026-11-22T09:30:00.250Z`), the form every `updated_at` and `deleted_at` takes.
///
/// Hand-rolled rather than `ISO8601DateFormatter`: it is called for every document on the hot
/// path, must be exact to the millisecond, and needs no locale or shared mutable formatter.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var unixMilliseconds: Int64

    public init(unixMilliseconds: Int64) { self.unixMilliseconds = unixMilliseconds }

    public init(unixNanoseconds: Int64) {
        self.unixMilliseconds = unixNanoseconds >= 0 ? unixNanoseconds / 1_000_000 : (unixNanoseconds - 999_999) / 1_000_000
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.unixMilliseconds < b.unixMilliseconds }

    public var description: String { rfc3339 }

    public var rfc3339: String {
        let ms = unixMilliseconds
        let days = floorDiv(ms, 86_400_000)
        let msOfDay = ms - days * 86_400_000
        let (y, m, d) = Self.civil(fromDays: days)
        let h = msOfDay / 3_600_000, mi = msOfDay / 60_000 % 60, s = msOfDay / 1000 % 60, f = msOfDay % 1000
        // Years 0...9999, the ones RFC 3339 can write with four digits, are written digit by digit
        // (every stored document gets a stamp: the server writes thousands a second).
        guard (0...9999).contains(y) else {
            return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(f, 3))Z"
        }
        return String(unsafeUninitializedCapacity: 24) { out in
            var i = 0
            func digits(_ value: Int64, _ width: Int) {
                var v = value
                for k in stride(from: width - 1, through: 0, by: -1) {
                    out[i + k] = UInt8(ascii: "0") + UInt8(v % 10)
                    v /= 10
                }
                i += width
            }
            func char(_ c: Unicode.Scalar) {
                out[i] = UInt8(ascii: c)
                i += 1
            }
            digits(y, 4); char("-"); digits(m, 2); char("-"); digits(d, 2); char("T")
            digits(h, 2); char(":"); digits(mi, 2); char(":"); digits(s, 2); char("."); digits(f, 3); char("Z")
            return i
        }
    }

    /// `yyyyMMdd-HHmmss` in UTC, for file names.
    public var compactUTC: String {
        let days = floorDiv(unixMilliseconds, 86_400_000)
        let secOfDay = (unixMilliseconds - days * 86_400_000) / 1000
        let (y, m, d) = Self.civil(fromDays: days)
        return "\(pad(y, 4))\(pad(m, 2))\(pad(d, 2))-\(pad(secOfDay / 3600, 2))\(pad(secOfDay / 60 % 60, 2))\(pad(secOfDay % 60, 2))"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `nil` for anything else.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= b.count else { return nil }
            var v: Int64 = 0
            for c in b[range] {
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
            }
            return v
        }
        guard b.count >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54 || b[10] == 0x74, b[13] == 0x3A, b[16] == 0x3A,
              let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10),
              let h = num(11..<13), let mi = num(14..<16), let s = num(17..<19),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        var i = 19
        var millis: Int64 = 0
        if b[i] == 0x2E {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if digits < 3 { millis = millis * 10 + Int64(b[i] - 0x30) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<3 where digits < 3 { millis *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            guard let oh = num(i + 1..<i + 3), i + 3 < b.count, b[i + 3] == 0x3A, let om = num(i + 4..<i + 6) else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == 0x2D ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Self.days(fromCivil: y, mo, d)
        self.unixMilliseconds = ((days * 86_400 + h * 3600 + mi * 60 + s) - offsetMinutes * 60) * 1000 + millis
    }

    // Howard Hinnant's civil-from-days and days-from-civil algorithms (proleptic Gregorian).
    /// Year, month, day of the `z0`-th day since 1970-01-01.
    public static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    public static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}

private func pad(_ v: Int64, _ width: Int) -> String {
    let s = String(v)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}
