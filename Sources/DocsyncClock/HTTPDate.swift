import DocsyncModel

/// Parses the three date forms RFC 7231 §7.1.1.1 requires a recipient to accept, into Unix seconds:
/// IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, obsolete RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`,
/// and asctime `Sun Nov  6 08:49:37 1994`.
public enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    public static func parse(_ text: String) -> Int64? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        if tokens.count == 4, tokens[3] == "GMT" {
            let dateParts = tokens[1].split(separator: "-").map(String.init)
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT. Two-digit years per RFC 7231's rule of
            // thumb for this century: 00-69 → 20xx, 70-99 → 19xx.
            guard dateParts.count == 3, dateParts[2].count == 2, let yy = Int64(dateParts[2]) else { return nil }
            return make(year: yy < 70 ? 2000 + yy : 1900 + yy, month: dateParts[1], day: dateParts[0], time: tokens[2])
        }
        if tokens.count == 6, tokens[5] == "GMT" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard let year = Int64(tokens[3]) else { return nil }
            return make(year: year, month: tokens[2], day: tokens[1], time: tokens[4])
        }
        if tokens.count == 5 {
            // asctime: Sun Nov  6 08:49:37 1994
            guard let year = Int64(tokens[4]) else { return nil }
            return make(year: year, month: tokens[1], day: tokens[2], time: tokens[3])
        }
        return nil
    }

    private static func make(year: Int64, month: String, day: String, time: String) -> Int64? {
        // Four-digit years only: what a date header can hold, and the civil arithmetic cannot overflow.
        guard (0...9999).contains(year), let m = months.firstIndex(of: month.lowercased()), let d = Int64(day), (1...31).contains(d) else { return nil }
        let hms = time.split(separator: ":").compactMap { Int64($0) }
        guard hms.count == 3, hms.allSatisfy({ $0 >= 0 }), hms[0] < 24, hms[1] < 60, hms[2] < 61 else { return nil }
        let days = Timestamp.days(fromCivil: year, Int64(m + 1), d)
        return days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]
    }

    /// IMF-fixdate for Unix seconds, the form a server sends.
    public static func format(unixSeconds: Int64) -> String {
        let days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        let secs = unixSeconds - days * 86_400
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][Int(((days % 7) + 7) % 7)]
        let (y, m, d) = Timestamp.civil(fromDays: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let month = months[Int(m - 1)].capitalized
        return "\(weekday), \(two(d)) \(month) \(y) \(two(secs / 3600)):\(two(secs / 60 % 60)):\(two(secs % 60)) GMT"
    }
}

extension String {
    fileprivate var capitalized: String { prefix(1).uppercased() + dropFirst() }
}
