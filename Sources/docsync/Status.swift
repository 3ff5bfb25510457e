import ArgumentParser
import DocsyncAgent
import DocsyncClock
import DocsyncConfig
import DocsyncIndex
import DocsyncModel
import Foundation

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the index knows: synced, pending, invalid files and why, endpoint state.")

    @Argument(help: "The synced folder (without --config).")
    var directory: String?

    @Option(help: "Show every folder of this config file (`watch --config`), each under its name.")
    var config: String?

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "Keep showing it, refreshed in place (a JSON object a line with --json), until interrupted.")
    var watch = false

    @Option(help: "Seconds between refreshes with --watch.")
    var interval: Double = 1

    func validate() throws {
        guard (0.05...3600).contains(interval) else { throw ValidationError("--interval must be between 0.05 and 3600 seconds") }
        guard (directory == nil) != (config == nil) else { throw ValidationError("name one folder, or pass --config FILE") }
    }

    /// The folders shown: the one named, or each of the config's, with its name.
    func folders() throws -> [(name: String?, root: String)] {
        guard let config else { return [(nil, absolutePath(directory ?? "."))] }
        do {
            return try AgentConfig.load(config).folders.map { ($0.name, $0.path) }
        } catch let error as ConfigError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let folders = try folders()
        for folder in folders where !Index.exists(root: folder.root) {
            throw ValidationError("\(folder.root) has no docsync index yet; run `docsync watch` or `docsync sync` on it first")
        }
        let terminal = isatty(STDOUT_FILENO) == 1
        repeat {
            let text = try await render(folders)
            // On a terminal the screen is redrawn; elsewhere each refresh follows the last.
            emit(watch && terminal && !json ? "\u{1B}[H\u{1B}[2J" + text : text)
            if watch { try await Task.sleep(for: .milliseconds(Int64(interval * 1000))) }
        } while watch
    }

    /// One folder's status as it always was; several (from a config) each under a `== name (path)`
    /// heading, or in JSON as `{"folders": [...]}`, each object with its `name` and `folder`.
    func render(_ folders: [(name: String?, root: String)]) async throws -> String {
        let now = SystemClockSeam().wallNanoseconds() / 1_000_000
        var texts: [String] = []
        var objects: [JSONValue] = []
        for folder in folders {
            let status = try await AgentStatus.read(root: folder.root)
            guard let name = folder.name else { return json ? JSONWriter.string(status.json(now: now)) : status.text(now: now) }
            if json, case .object(var object) = status.json(now: now) {
                object["name"] = .string(name)
                object["folder"] = .string(folder.root)
                objects.append(.object(object))
            }
            texts.append("== \(name) (\(folder.root))\n" + status.text(now: now))
        }
        return json ? JSONWriter.string(.object(JSONObject([(key: "folders", value: .array(objects))]))) : texts.joined(separator: "\n")
    }
}
