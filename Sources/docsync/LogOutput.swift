import ArgumentParser
import DocsyncModel
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// How log lines are written to stderr.
enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `TIME LEVEL message key=value …`; under systemd (`JOURNAL_STREAM` set) without the time,
    /// which the journal adds, and with a `<N>` syslog priority prefix the journal reads.
    case text
    /// One JSON object a line (`time`, `level`, `message`, then the metadata), for log shippers.
    case json
}

/// docsync's log handler: one `write(2)` a line, so lines from several tasks never interleave.
struct LineLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let format: LogFormat
    /// Under systemd's journal: no timestamps of our own, a priority prefix instead.
    let journal: Bool

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let line = format == .json ? Self.json(event, all) : text(event, all)
        var bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress!, $0.count) }
    }

    private func text(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\(LogText.escaped("\($0.value)"))" }.joined()
        let message = LogText.escaped("\(event.message)")
        if journal { return "<\(Self.priority(event.level))>\(event.level) \(message)\(fields)" }
        return "\(Self.timestamp()) \(event.level) \(message)\(fields)"
    }

    static func json(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var object = JSONObject()
        object["time"] = .string(timestamp())
        object["level"] = .string(event.level.rawValue)
        object["message"] = .string("\(event.message)")
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where object[key] == nil { object[key] = .string("\(value)") }
        return JSONWriter.string(.object(object))
    }

    /// syslog's priorities, as sd-daemon(3) prefixes read by the journal.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    static func timestamp() -> String {
        Timestamp(unixMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)).rfc3339
    }
}
