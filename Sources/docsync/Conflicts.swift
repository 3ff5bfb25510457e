import ArgumentParser
import DocsyncModel
import DocsyncFiles
import DocsyncIndex
import Foundation

struct Conflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List conflict copies: the losing versions of documents edited on two sides at once.")

    @Argument(help: "The synced folder.")
    var directory: String

    func run() async throws {
        let root = absolutePath(directory)
        let copies = ConflictCopy.all(in: root)
        if copies.isEmpty {
            emit("no conflicts")
            return
        }
        for copy in copies { emit("\(copy)  (losing version of \(ConflictCopy.documentPath(of: copy)!))") }
        emit("settle one with: docsync resolve FILE --keep mine|theirs")
    }
}

struct Resolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Settle a conflict copy (FILE --keep mine|theirs), or deletions held by the guard (--deletions apply|restore DIR).",
        discussion: """
            mine: the conflict copy is deleted. theirs: the copy's content replaces the document (same id) and the copy is \
            deleted; a running agent syncs the change. --deletions apply: the held deletions are carried out (the files go \
            to .docsync/trash); --deletions restore: the documents go back to the server. The agent acts on it within a \
            minute, or at its next start.
            """)

    enum Keep: String, ExpressibleByArgument, CaseIterable { case mine, theirs }
    enum Deletions: String, ExpressibleByArgument, CaseIterable { case apply, restore }

    @Argument(help: "The conflict copy (name.sync-conflict-YYYYMMDD-HHMMSS.json), or with --deletions the synced folder.")
    var file: String

    @Option(help: "mine or theirs.")
    var keep: Keep?

    @Option(help: "apply or restore the deletions the guard holds in the folder FILE names.")
    var deletions: Deletions?

    func validate() throws {
        guard (keep == nil) != (deletions == nil) else { throw ValidationError("give --keep for a conflict copy, or --deletions for a folder") }
        if keep != nil, ConflictCopy.documentPath(of: file) == nil {
            throw ValidationError("\(file) is not a conflict copy (expected NAME.sync-conflict-YYYYMMDD-HHMMSS.json)")
        }
    }

    func run() async throws {
        if let deletions { return try await decide(deletions) }
        guard let keep else { return }
        let copy = absolutePath(file)
        let document = ConflictCopy.documentPath(of: copy)!
        guard FileManager.default.fileExists(atPath: copy) else { throw ValidationError("\(copy) does not exist") }
        switch keep {
        case .mine:
            break
        case .theirs:
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: copy)))
            var version: JSONObject
            do {
                version = try DocumentRules.parseObject(bytes)
            } catch {
                throw ValidationError("\(copy): \(error)")
            }
            // The document keeps its identity whatever the copy says.
            let current = try? Array(Data(contentsOf: URL(fileURLWithPath: document)))
            if let current, let id = (try? DocumentRules.parseObject(current))?["id"] {
                version["id"] = id
            }
            // Only over the version just read: a save (or a pulled change) meanwhile is not lost.
            guard try FileSystem.replace(document, with: JSONWriter.fileBytes(.object(version)), ifItHolds: current) else {
                throw ValidationError("\(document) changed while it was being resolved; nothing was written, run the command again")
            }
        }
        try FileManager.default.removeItem(atPath: copy)
        emit(keep == .mine ? "kept \(document); removed \(copy)" : "replaced \(document) with \(copy)'s version; removed the copy")
    }

    /// Records the user's word on the held deletions; the agent carries it out.
    private func decide(_ decision: Deletions) async throws {
        let root = absolutePath(file)
        guard Index.exists(root: root) else { throw ValidationError("\(root) has no docsync index") }
        let index = try Index.open(root: root)
        let held = try await index.read { tx in
            try tx.heldDeletionCount() + (try tx.meta(.localDeletionsHeld) == nil ? 0 : try tx.heldLocalDeletionCount())
        }
        guard held > 0 else {
            emit("no deletions are held in \(root)")
            return
        }
        try await index.write { try $0.setMeta(.deletionsDecision, decision.rawValue) }
        emit(decision == .apply
            ? "\(held) held deletions will be applied (files deleted on the server go to .docsync/trash; files deleted here are deleted on the server)"
            : "\(held) held deletions will be refused (documents deleted on the server go back to it; files deleted here are written back)")
    }
}
