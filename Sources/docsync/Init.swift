import ArgumentParser
import DocsyncAgent
import DocsyncConfig
import Foundation

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a commented config naming a folder and its endpoint, or add the folder to the config that exists (for `watch --config`).")

    @Argument(help: "The folder to sync (made if it does not exist).")
    var directory: String

    @Option(help: "The folder's endpoint (as `watch --endpoint` takes it).")
    var endpoint: String

    @Option(help: "The config file to write or add to (default: $XDG_CONFIG_HOME/docsync/docsync.yaml, else ~/.config/docsync/docsync.yaml).")
    var config: String?

    @Option(help: "The folder's name in status, metrics and logs (default: the folder's own name).")
    var name: String?

    @Option(help: "The token file the config names (default: NAME.token beside the config). It is not written: put the token in it.")
    var tokenFile: String?

    func validate() throws {
        _ = try EndpointChoice(url: endpoint)
    }

    func run() throws {
        let file = absolutePath(config ?? ConfigTemplate.defaultPath())
        let folder = (file as NSString).deletingLastPathComponent
        let root = absolutePath(directory)
        let name = self.name ?? Agent.defaultName(root: root)
        let tokenFile = tokenFile.map(absolutePath) ?? folder + "/\(name).token"
        let entry = ConfigTemplate.entry(name: name, path: root, endpoint: endpoint, tokenFile: tokenFile)
        let existing = FileManager.default.fileExists(atPath: file) ? try String(contentsOfFile: file, encoding: .utf8) : nil
        let text = existing.map { $0 + ($0.hasSuffix("\n") || $0.isEmpty ? "" : "\n") + entry } ?? ConfigTemplate.header + entry
        // What is written must read back with this folder in it (an entry appended after another
        // top-level key would not): the user's file is only ever replaced by a config that works.
        do {
            let parsed = try AgentConfig.parse(text, file: file)
            guard parsed.folders.last?.path == root else { throw ConfigError(file: file, "the new entry does not end the `folders:` list") }
        } catch {
            throw ValidationError("\(file) is left as it was: with \(root) added it would not read back (\(error)). Add this under `folders:` by hand:\n\(entry)")
        }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        emit(existing == nil ? "wrote \(file) with the folder \"\(name)\" (\(root))" : "added the folder \"\(name)\" (\(root)) to \(file)")
        if !FileManager.default.fileExists(atPath: tokenFile) {
            emit("put the endpoint's token in \(tokenFile): (umask 077; cat > \(tokenFile))")
        }
        emit("then: docsync watch --config \(file)")
    }
}
