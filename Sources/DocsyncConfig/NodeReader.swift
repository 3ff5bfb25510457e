import DocsyncModel
import Foundation
import Yams

/// Reads the config's YAML nodes into typed values, each error naming the line and the key.
struct NodeReader {
    let file: String
    /// Where relative paths start: the config file's folder.
    let base: String

    func fail(_ node: Node, _ reason: String) -> ConfigError {
        ConfigError(file: file, line: node.mark?.line, reason)
    }

    /// A mapping of string keys, each one of `keys` (a misspelt key is an error, not ignored).
    func mapping(_ node: Node, at place: String, keys: Set<String>) throws -> [String: Node] {
        guard case .mapping(let mapping) = node else { throw fail(node, "\(place) must be a mapping of `key: value` lines") }
        var out: [String: Node] = [:]
        for (key, value) in mapping {
            guard let name = key.scalar?.string else { throw fail(key, "\(place): keys must be plain words") }
            guard keys.contains(name) else {
                throw fail(key, "\(place): unknown key `\(name)` (known: \(keys.sorted().joined(separator: ", ")))")
            }
            guard out[name] == nil else { throw fail(key, "\(place): `\(name)` is given twice") }
            out[name] = value
        }
        return out
    }

    func sequence(_ node: Node, at place: String) throws -> [Node] {
        guard case .sequence(let sequence) = node else { throw fail(node, "\(place) must be a list (lines starting with `- `)") }
        return Array(sequence)
    }

    func string(_ node: Node, at place: String) throws -> String {
        guard case .scalar(let scalar) = node, !scalar.string.isEmpty else { throw fail(node, "\(place) must be a non-empty text") }
        return scalar.string
    }

    func number(_ node: Node, at place: String, in range: ClosedRange<Double>) throws -> Double {
        guard let value = node.float, range.contains(value) else {
            throw fail(node, "\(place) must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A list of docTypes (a plain text is one).
    func docTypes(_ node: Node, at place: String) throws -> [String] {
        let nodes = if case .sequence = node { try sequence(node, at: place) } else { [node] }
        guard nodes.count <= TypeSelection.maxTypes else { throw fail(node, "\(place) names more than \(TypeSelection.maxTypes) docTypes") }
        return try nodes.map { item in
            let type = try string(item, at: place)
            if let problem = DocumentRules.docTypeProblem(type) { throw fail(item, "\(place): \"\(type)\" is not a docType: \(problem)") }
            return type
        }
    }

    func path(_ node: Node, at place: String) throws -> String {
        ConfigPaths.absolute(try string(node, at: place), base: base)
    }

    /// `commit`, or `{branch: NAME}`.
    func git(_ node: Node, at place: String) throws -> AgentConfig.GitChoice {
        if case .scalar(let scalar) = node {
            guard scalar.string == "commit" else { throw fail(node, "\(place) is `commit` or `{branch: NAME}`") }
            return .commit
        }
        let keys = try mapping(node, at: place, keys: ["branch"])
        guard let branch = keys["branch"] else { throw fail(node, "\(place) is `commit` or `{branch: NAME}`") }
        return .branch(try string(branch, at: "\(place).branch"))
    }

    /// `NAME: "Full Name <email>"` lines.
    func authors(_ node: Node, at place: String) throws -> [String: String] {
        guard case .mapping(let mapping) = node else { throw fail(node, "\(place) must be a mapping of `NAME: Full Name <email>` lines") }
        var out: [String: String] = [:]
        for (key, value) in mapping {
            guard let name = key.scalar?.string else { throw fail(key, "\(place): keys must be token names") }
            let identity = try string(value, at: "\(place).\(name)")
            guard identity.contains("<"), identity.hasSuffix(">") else { throw fail(value, "\(place).\(name): expected Full Name <email>") }
            out[name] = identity
        }
        return out
    }

    /// One entry of `folders:`.
    func folder(_ node: Node, at place: String) throws -> AgentConfig.Folder {
        let keys = try mapping(node, at: place, keys: AgentConfig.folderKeys)
        guard let pathNode = keys["path"] else { throw fail(node, "\(place) has no `path:` (the folder to sync)") }
        guard let endpointNode = keys["endpoint"] else { throw fail(node, "\(place) has no `endpoint:` (the server's URL)") }
        let path = try self.path(pathNode, at: "\(place).path")
        let name = try keys["name"].map { try string($0, at: "\(place).name") } ?? ((path as NSString).lastPathComponent)
        guard name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) }) else {
            throw fail(keys["name"] ?? pathNode, "\(place): the name \"\(name)\" may hold only letters, digits, `-`, `_` and `.` (set `name:`)")
        }
        var folder = AgentConfig.Folder(name: name, path: path, endpoint: try string(endpointNode, at: "\(place).endpoint"))
        folder.tokenFile = try keys["token_file"].map { try self.path($0, at: "\(place).token_file") }
        folder.caFile = try keys["ca_file"].map { try self.path($0, at: "\(place).ca_file") }
        folder.passphraseFile = try keys["passphrase_file"].map { try self.path($0, at: "\(place).passphrase_file") }
        folder.ignore = try keys["ignore"].map { list in
            try sequence(list, at: "\(place).ignore").map { try string($0, at: "\(place).ignore") }
        } ?? []
        folder.types = try keys["types"].map { try docTypes($0, at: "\(place).types") }
        folder.excludeTypes = try keys["exclude_types"].map { try docTypes($0, at: "\(place).exclude_types") } ?? []
        folder.maxFileSize = try keys["max_file_size"].map { Int(try number($0, at: "\(place).max_file_size", in: 1...Double(1 << 40))) }
        folder.maxDownloadSize = try keys["max_download_size"].map { Int64(try number($0, at: "\(place).max_download_size", in: 0...Double(1 << 50))) }
        folder.requestTimeout = try keys["request_timeout"].map { try number($0, at: "\(place).request_timeout", in: 0.001...86_400) }
        folder.pollInterval = try keys["poll_interval"].map { try number($0, at: "\(place).poll_interval", in: 0.1...86_400) }
        folder.deletionGuardPercent = try keys["deletion_guard"].map { node in
            if case .scalar(let scalar) = node, scalar.string == "off" { return 0 }
            return try number(node, at: "\(place).deletion_guard (a percentage, or off)", in: 1...100)
        }
        folder.git = try keys["git"].map { try git($0, at: "\(place).git") }
        folder.authors = try keys["authors"].map { try authors($0, at: "\(place).authors") } ?? [:]
        return folder
    }
}

enum ConfigPaths {
    /// `path` made absolute: `~/…` from the home folder, relative from `base`.
    static func absolute(_ path: String, base: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        // `$HOME` as a shell expands `~` (a service or `sudo -E` may set it apart from the passwd entry).
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let expanded = path == "~" || path.hasPrefix("~/") ? home + path.dropFirst() : path
        let url = expanded.hasPrefix("/") ? URL(fileURLWithPath: expanded) : URL(fileURLWithPath: expanded, relativeTo: URL(fileURLWithPath: base, isDirectory: true))
        var result = url.standardizedFileURL.path
        while result.count > 1 && result.hasSuffix("/") { result.removeLast() }
        return result
    }

    /// The first line where `[` and `{` nest deeper than `limit` outside quotes and comments, if
    /// any: a guard before Yams, which composes nested collections by recursion.
    static func lineNestedDeeperThan(_ limit: Int, in text: String) -> Int? {
        var (depth, line, quote, comment, previous) = (0, 1, Character?.none, false, Character(" "))
        for c in text {
            if c == "\n" || c == "\r\n" { line += 1; comment = false; previous = " "; continue }
            defer { previous = c }
            if comment { continue }
            if let q = quote { if c == q { quote = nil }; continue }
            switch c {
            case "\"", "'":
                // A quote opens a quoted scalar only where one may start; `it's` is plain text.
                if " \t[{,:".contains(previous) { quote = c }
            case "#" where previous == " " || previous == "\t": comment = true
            case "[", "{":
                depth += 1
                if depth > limit { return line }
            case "]", "}": depth = max(0, depth - 1)
            default: break
            }
        }
        return nil
    }
}
