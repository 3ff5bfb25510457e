import ArgumentParser
import AsyncHTTPClient
import DocsyncRuntime
import DocsyncAgent
import DocsyncConfig
import DocsyncHTTP
import DocsyncIndex
import DocsyncModel
import DocsyncWatcher
import Foundation
import Logging

/// The folders one `watch` runs: the folder on the command line, or every folder of a config
/// file. A setting comes from the flag when one is given, else the environment, else the file,
/// else its default.
struct WatchPlan {
    struct Folder {
        var options: AgentOptions
        var caFile: String?
        /// An end-to-end encrypted folder's passphrase (docs/ENCRYPTION.md); `nil`: in clear.
        var passphrase: String?
    }

    var folders: [Folder]
    var level: Logger.Level
    var format: LogFormat
    var metricsAddr: String?
    /// Folders of a config file left out, and why (a folder that is not there): logged at start.
    var skipped: [String] = []

    /// One folder, from the command line.
    static func single(
        directory: String, endpoint: String, tokenFile: String?, caFile: String?, tuning: AgentTuning, metricsAddr: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> WatchPlan {
        var options = AgentOptions(root: absolutePath(directory), endpointURL: endpoint, token: try resolveToken(file: tokenFile), tokenFile: tokenFile)
        tuning.apply(to: &options)
        let (level, format) = try tuning.logging(environment: environment)
        let address = try metricsAddress(flag: metricsAddr, environment: environment, file: nil)
        let passphrase = try resolvePassphrase(file: tuning.passphraseFile)
        return WatchPlan(
            folders: [Folder(options: options, caFile: caFile.map(absolutePath), passphrase: passphrase)], level: level, format: format, metricsAddr: address)
    }

    /// Every folder of the config file at `path`, the flags laid over each.
    static func config(
        _ path: String, tuning: AgentTuning, metricsAddr: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> WatchPlan {
        let config: AgentConfig
        do {
            config = try AgentConfig.load(path)
        } catch let error as ConfigError {
            throw ValidationError(error.description)
        }
        let (level, format) = try tuning.logging(file: (config.logLevel, config.logFormat), environment: environment)
        // A folder that is gone (deleted, a disk not mounted) is left out and said; the others
        // run, so a restart does not fail for all of them. Any other mistake refuses the file.
        var folders: [Folder] = []
        var skipped: [String] = []
        for entry in config.folders {
            guard isFolder(entry.path) else {
                skipped.append("\(config.file): folder \"\(entry.name)\": \(entry.path) is not a folder (create it, or correct `path:`)")
                continue
            }
            folders.append(try folder(entry, file: config.file, tuning: tuning))
        }
        guard !folders.isEmpty else { throw ValidationError(skipped.joined(separator: "\n")) }
        let address = try metricsAddress(flag: metricsAddr, environment: environment, file: config.metricsAddr.map { ($0, config.file) })
        return WatchPlan(folders: folders, level: level, format: format, metricsAddr: address, skipped: skipped)
    }

    /// The listener's address: the flag's, else `DOCSYNC_METRICS_ADDR`, else the config file's
    /// (named in the error when it is the one that does not parse); `nil`: no listener.
    static func metricsAddress(flag: String?, environment: [String: String], file: (address: String, path: String)?) throws -> String? {
        if let address = flag ?? environment["DOCSYNC_METRICS_ADDR"].flatMap({ $0.isEmpty ? nil : $0 }) {
            _ = try MetricsListener.parse(address)
            return address
        }
        guard let file else { return nil }
        do {
            _ = try MetricsListener.parse(file.address)
        } catch {
            throw ValidationError("\(file.path): metrics_addr: \(error)")
        }
        return file.address
    }

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// One entry of the file, checked as the command line's folder would be: its endpoint, that
    /// the folder exists, and its token.
    static func folder(_ entry: AgentConfig.Folder, file: String, tuning: AgentTuning) throws -> Folder {
        let place = "\(file): folder \"\(entry.name)\""
        do {
            _ = try EndpointChoice(url: entry.endpoint)
        } catch {
            throw ValidationError("\(place): \(error)")
        }
        guard isFolder(entry.path) else { throw ValidationError("\(place): \(entry.path) is not a folder (create it, or correct `path:`)") }
        let token: String
        do {
            token = try resolveToken(file: entry.tokenFile)
        } catch {
            throw ValidationError("\(place): \(error)")
        }
        var options = AgentOptions(root: entry.path, endpointURL: entry.endpoint, token: token, tokenFile: entry.tokenFile)
        options.name = entry.name
        options.extraIgnore = entry.ignore
        if let bytes = entry.maxFileSize { options.maxFileSize = bytes }
        if let bytes = entry.maxDownloadSize { options.maxDownloadBytes = bytes }
        if let seconds = entry.requestTimeout { options.requestTimeout = .milliseconds(Int64(seconds * 1000)) }
        if let seconds = entry.pollInterval { options.pollInterval = .milliseconds(Int64(seconds * 1000)) }
        if let percent = entry.deletionGuardPercent { options.deletionGuard = percent == 0 ? nil : DeletionGuard(fraction: percent / 100) }
        options.selection = TypeSelection(only: entry.types.map(Set.init), except: Set(entry.excludeTypes))
        switch entry.git {
        case .commit?: options.git = GitHistoryOptions(target: .checkedOut, authors: entry.authors)
        case .branch(let name)?:
            try GitFlags.checkBranch(name, "\(place), git.branch")
            options.git = GitHistoryOptions(target: .branch(name), authors: entry.authors)
        case nil: break
        }
        tuning.apply(to: &options)
        let passphrase: String?
        do {
            passphrase = try resolvePassphrase(file: tuning.passphraseFile) ?? entry.passphraseFile.map(readToken)
        } catch {
            throw ValidationError("\(place): passphrase_file: \(error)")
        }
        return Folder(options: options, caFile: entry.caFile, passphrase: passphrase)
    }
}

/// Runs `body` with an agent for every folder of `plan`, shut down afterwards whatever `body`
/// does. The folders share one inotify instance, and one HTTP client for each CA file (a client
/// holds connection pools and buffers: one per folder was most of what 500 folders cost).
func withAgents<T>(
    _ plan: WatchPlan, logger: Logger, onWatching: (@Sendable () -> Void)? = nil, _ body: ([Agent]) async throws -> T
) async throws -> T {
    var clients: [String: HTTPClient] = [:]
    func shutdown() async { for client in clients.values { try? await client.shutdown() } }
    let result: T
    do {
        var agents: [Agent] = []
        let hub = InotifyHub()
        let footprint = Index.Footprint.forFolders(plan.folders.count)
        let turns = footprint == .lean ? Permits(max(2, ProcessInfo.processInfo.activeProcessorCount)) : nil
        for folder in plan.folders {
            let key = folder.caFile ?? ""
            if clients[key] == nil {
                let sharing = plan.folders.filter { $0.caFile == folder.caFile }
                clients[key] = try makeHTTPClient(
                    caFile: folder.caFile, folders: sharing.count, requestTimeout: sharing.map(\.options.requestTimeout).max() ?? .zero)
            }
        }
        let choices = try plan.folders.map { try EndpointChoice(url: $0.options.endpointURL) }
        let client = { (n: Int) in clients[plan.folders[n].caFile ?? ""]! }
        let keys = try await FolderVault.keys(for: plan.folders, endpoints: choices.map(\.adapter), client: client, logger: logger)
        for (n, folder) in plan.folders.enumerated() {
            var options = folder.options
            options.onWatching = onWatching
            options.watchHub = hub
            options.turns = turns
            options.indexFootprint = footprint
            let makeEndpoint = choices[n].factory(client: client(n), sealedWith: keys[n])
            agents.append(try Agent(options: options, endpoint: makeEndpoint, logger: plan.folders.count > 1 ? logger.folder(folder) : logger))
        }
        result = try await body(agents)
    } catch {
        await shutdown()
        throw error
    }
    await shutdown()
    return result
}

extension Logger {
    /// With several folders in one process, each folder's lines say which folder they are about.
    func folder(_ folder: WatchPlan.Folder) -> Logger {
        var logger = self
        logger[metadataKey: "folder"] = .string(folder.options.name ?? Agent.defaultName(root: folder.options.root))
        return logger
    }
}
