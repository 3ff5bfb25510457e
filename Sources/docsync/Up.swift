import ArgumentParser
import DocsyncAgent
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
        let service = AgentService {
            var iterator = started.makeAsyncIterator()
            guard let url = await iterator.next() else { return nil }
            var options = AgentOptions(root: root, endpointURL: url, token: token, tokenFile: tokenFile)
            tuning.apply(to: &options)
            return try Agent(options: options, endpoint: EndpointChoice(PingPongAdapter(bases: [url])).factory(client: client), logger: logger)
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
}
