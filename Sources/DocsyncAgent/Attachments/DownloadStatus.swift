import DocsyncIndex
import DocsyncModel

/// One download job as `status` shows it: pending (with the last failure), in flight (bytes
/// received), failed (over the size limit, bytes that do not match, gone from the server; tried
/// again at the next start) or refused (another server's URL: never fetched).
public struct DownloadStatus: Sendable, Hashable {
    public var document: String
    public var property: String
    public var url: String
    public var state: String
    public var bytesReceived: Int64
    public var attempts: Int
    public var error: String?

    init(_ row: (download: DownloadRow, documentPath: String?, attempts: Int, lastError: String?)) {
        document = row.documentPath ?? row.download.docID
        property = row.download.property
        url = row.download.url
        state = row.download.state.rawValue
        bytesReceived = row.download.bytesReceived
        attempts = row.attempts
        error = row.download.error ?? row.lastError
    }

    var text: String {
        var line = "  \(document) \(property) ← \(url)"
        switch state {
        case "downloading": line += ": downloading, \(format3(Double(bytesReceived) / 1_048_576)) MiB received"
        case "pending": line += ": pending" + (error.map { " (attempt \(attempts) failed: \($0))" } ?? "")
        case "failed": line += ": not downloaded (tried again at the next start): \(error ?? "refused")"
        case "refused": line += ": not downloaded: \(error ?? "refused")"
        default: line += ": \(state)"
        }
        return line
    }

    var json: JSONValue {
        .object(JSONObject([
            ("document", .string(document)), ("property", .string(property)), ("url", .string(url)), ("state", .string(state)),
            ("bytes_received", .number(String(bytesReceived))), ("attempts", .number(String(attempts))),
            ("error", error.map { .string($0) } ?? .null),
        ].map { (key: $0.0, value: $0.1) }))
    }
}
