import ArgumentParser
import AsyncHTTPClient
import DocsyncRuntime
import DocsyncAgent
import DocsyncClock
import DocsyncEndpoint
import DocsyncVault
import DocsyncFiles
import DocsyncHTTP
import DocsyncPingPong
import DocsyncServer
import Foundation
import Logging
import ServiceLifecycle

struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the reference endpoint and sync a folder into it, in one process.",
        discussion: "The embedded default for a first try: the endpoint's data lives in DIR/.docsync/server/, its token is generated once and kept in DIR/.docsync/server/token.")

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var listen: ListenOptions

    @OptionGroup var tuning: AgentTuning

    func run() async throws {
        let (level, format) = try tuning.logging()
        let logger = bootstrapLogging(level, format: format)
        let root = absolutePath(directory)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let dataDirectory = root + "/.docsync/server"
        let (token, tokenFile, _) = try ensureToken(in: dataDirectory)
        FileSystem.raiseFileLimit()  // a few hundred idle clients must not lock everyone out
        let server = try ReferenceServer(configuration: .init(host: listen.host, port: listen.port, dataDirectory: dataDirectory, token: token))
        let (started, startedContinuation) = AsyncStream<String>.makeStream()
        let app = try server.application(logger: logger) { host, port in
            let url = "http://\(host):\(port)"
            emit(url)
            // Where the token is, never the token: terminal output ends up in logs and scrollback.
            emit("token: in \(tokenFile)")
            emit("syncing \(root) → \(url)/api/document")
            startedContinuation.yield(url)
            startedContinuation.finish()
        }
        let client = try makeHTTPClient()
        let passphrase = try resolvePassphrase(file: tuning.passphraseFile)
        let service = AgentService {
            var iterator = started.makeAsyncIterator()
            guard let url = await iterator.next() else { return nil }
            var options = AgentOptions(root: root, endpointURL: url, token: token, tokenFile: tokenFile)
            tuning.apply(to: &options)
            let choice = EndpointChoice(PingPongAdapter(bases: [url]))
            let keys = try await Self.keys(root: root, passphrase: passphrase, endpoint: choice.adapter, client: client, token: token, logger: logger)
            return try Agent(options: options, endpoint: choice.factory(client: client, sealedWith: keys), logger: logger)
        }
        let group = signalledGroup([.init(service: app), .init(service: service)], logger: logger)
        do {
            try await group.run()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// The folder's keys with `--passphrase-file`: the embedded server's first start makes them
    /// (the recovery key printed once). Without one, a server holding a key refuses the start.
    static func keys(
        root: String, passphrase: String?, endpoint adapter: any HTTPAdapter, client: HTTPClient, token: String, logger: Logger
    ) async throws -> VaultKeys? {
        let context = EndpointContext(clientID: "docsync-vault", clock: ServerClock(logger: logger), requestTimeout: .seconds(10), credential: token)
        let endpoint = adapter.make(client: client, context: context)
        guard let passphrase else {
            try await FolderVault.requireClear(root: root, endpoint: endpoint)
            return nil
        }
        if try await FolderVault.fetch(endpoint) == nil {
            let recovery = try await VaultSetup.create(root: root, endpoint: endpoint, passphrase: passphrase)
            emit("encryption is on; recovery key (shown once; it opens the folder if the passphrase is lost):")
            emit("  \(recovery)")
        }
        return try await FolderVault.keys(root: root, passphrase: passphrase, endpoint: endpoint)
    }
}
