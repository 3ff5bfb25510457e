import Foundation
import Yams

/// `docsync watch --config FILE`: several folders in one process, each with its endpoint,
/// credentials file and ignore rules, and the process's own settings (logging, the status and
/// metrics listener). YAML, read with Yams (libyaml): comments for the user, and errors that
/// name the file, the line and the key.
///
/// Relative paths are relative to the config file's folder; `~/` is the home folder.
public struct AgentConfig: Sendable, Equatable {
    public struct Folder: Sendable, Equatable {
        /// The folder's name in the status page, `status` and the metrics' `folder` label.
        public var name: String
        /// Absolute.
        public var path: String
        public var endpoint: String
        /// Absolute; without one the token comes from `DOCSYNC_TOKEN`.
        public var tokenFile: String?
        public var caFile: String?
        /// The passphrase of an end-to-end encrypted folder (docs/ENCRYPTION.md), first line.
        public var passphraseFile: String?
        /// `.docsyncignore` rules added to the folder's own file.
        public var ignore: [String] = []
        /// Only these docTypes (`nil`: every one), less `excludeTypes`.
        public var types: [String]?
        public var excludeTypes: [String] = []
        public var maxFileSize: Int?
        public var maxDownloadSize: Int64?
        public var requestTimeout: Double?
        public var pollInterval: Double?
        /// `deletion_guard:` as a percentage of the folder (1–100), `0` for `off`; `nil`: the default.
        public var deletionGuardPercent: Double?
        /// `git: commit` or `git: {branch: NAME}`: pulled changes committed (docs/GIT.md).
        public var git: GitChoice?
        /// `authors:` token name → `Name <email>`.
        public var authors: [String: String] = [:]
    }

    public enum GitChoice: Sendable, Equatable {
        case commit
        case branch(String)
    }

    /// The file this was read from (absolute).
    public let file: String
    public var logLevel: String?
    public var logFormat: String?
    public var metricsAddr: String?
    public var folders: [Folder]

    /// The largest config file read: a config is a few lines per folder.
    public static let maxBytes = 1 << 20
    /// How deeply `[` and `{` may nest: the schema needs three levels; Yams composes recursively.
    static let maxFlowDepth = 32

    public static let topKeys: Set<String> = ["log_level", "log_format", "metrics_addr", "folders"]
    public static let folderKeys: Set<String> = [
        "name", "path", "endpoint", "token_file", "ca_file", "passphrase_file", "ignore", "types", "exclude_types", "max_file_size", "request_timeout",
        "poll_interval", "max_download_size", "deletion_guard", "git", "authors",
    ]

    /// Reads and checks `path`: an error names the file, the line and what is wrong.
    public static func load(_ path: String) throws -> AgentConfig {
        let file = ConfigPaths.absolute(path, base: FileManager.default.currentDirectoryPath)
        let data: Data
        do {
            guard let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.intValue, size <= maxBytes else {
                throw ConfigError(file: file, "larger than \(maxBytes / 1024) KiB: not a docsync config")
            }
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(file: file, "cannot be read: \((error as NSError).localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw ConfigError(file: file, "is not UTF-8 text") }
        return try parse(text, file: file)
    }

    /// Parses `text` as the config at `file` (whose folder relative paths start from).
    public static func parse(_ text: String, file: String) throws -> AgentConfig {
        if let line = ConfigPaths.lineNestedDeeperThan(maxFlowDepth, in: text) {
            throw ConfigError(file: file, line: line, "nested more than \(maxFlowDepth) levels deep")
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw ConfigError(file: file, "is not valid YAML: \(error)")
        }
        let reader = NodeReader(file: file, base: (file as NSString).deletingLastPathComponent)
        guard let root else { throw ConfigError(file: file, "is empty: it needs a `folders:` list") }
        let top = try reader.mapping(root, at: "the file", keys: topKeys)
        var config = AgentConfig(
            file: file,
            logLevel: try top["log_level"].map { try reader.string($0, at: "log_level") },
            logFormat: try top["log_format"].map { try reader.string($0, at: "log_format") },
            metricsAddr: try top["metrics_addr"].map { try reader.string($0, at: "metrics_addr") },
            folders: [])
        guard let list = top["folders"] else { throw ConfigError(file: file, "has no `folders:` list: name at least one folder") }
        for (i, node) in try reader.sequence(list, at: "folders").enumerated() {
            config.folders.append(try reader.folder(node, at: "folders[\(i)]"))
        }
        try config.check(reader)
        return config
    }

    /// Rules across folders: at least one; names and paths unique; no folder inside another (its
    /// files would be synced twice, and the inner one's index with them).
    func check(_ reader: NodeReader) throws {
        guard !folders.isEmpty else { throw ConfigError(file: file, "`folders:` is empty: name at least one folder") }
        var names: Set<String> = []
        for folder in folders where !names.insert(folder.name).inserted {
            throw ConfigError(file: file, "two folders are named \"\(folder.name)\": give each a different `name:`")
        }
        for (i, a) in folders.enumerated() {
            for b in folders[(i + 1)...] {
                if a.path == b.path { throw ConfigError(file: file, "\(a.path) is listed twice (\"\(a.name)\" and \"\(b.name)\")") }
                let (outer, inner) = a.path.count < b.path.count ? (a, b) : (b, a)
                if inner.path.hasPrefix(outer.path == "/" ? "/" : outer.path + "/") {
                    throw ConfigError(file: file, "\(inner.path) (\"\(inner.name)\") is inside \(outer.path) (\"\(outer.name)\"): folders may not nest")
                }
            }
        }
    }
}

/// A config that cannot be used: which file, where, and why.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public let description: String

    public init(file: String, line: Int? = nil, _ reason: String) {
        description = "\(file)\(line.map { ":\($0)" } ?? ""): \(reason)"
    }
}
