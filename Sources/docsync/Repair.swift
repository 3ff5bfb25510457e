import ArgumentParser
import DocsyncAgent
import DocsyncFiles
import Foundation

/// `docsync repair DIR --endpoint URL`: the index made again from the folder and the server.
struct Repair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild a damaged index from the folder and the server; nothing of the folder is sent over the server's version.",
        discussion: """
            The damaged index is moved to .docsync/damaged-<time>/. A file that differs from the server's version gets the \
            server's version, and what it held is kept beside it as a conflict copy (`docsync resolve COPY --keep mine` sends it). \
            Files the server does not hold are sent by the next watch or sync.
            """)

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var tuning: AgentTuning

    func run() async throws {
        let (level, format) = try tuning.logging()
        let logger = bootstrapLogging(level, format: format)
        let root = absolutePath(directory)
        if let moved = try Agent.moveIndexAside(root: root) { emit("the damaged index is in \(moved)") }
        let before = Set(ConflictCopy.all(in: root))
        let report = try await withAgent(directory: directory, endpoint: endpoint, tuning: tuning, logger: logger) { try await $0.syncOnce() }
        let copies = ConflictCopy.all(in: root).filter { !before.contains($0) }
        emit("repaired: the index is made again; \(copies.count) files differed from the server's version and are kept beside it as conflict copies")
        for copy in copies { emit("  \(copy)  (docsync resolve \(root)/\(copy) --keep mine|theirs)") }
        if !report.complete { emit("not in sync yet: \(report.failure ?? "\(report.pending) pending"); run docsync sync or watch") }
    }
}
