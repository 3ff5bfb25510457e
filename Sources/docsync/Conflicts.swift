import ArgumentParser
import DocsyncModel
import DocsyncFiles
import Foundation

/// Conflict copies: `<name>.sync-conflict-<yyyyMMdd-HHmmss>.json` beside `<name>.json`.
enum ConflictCopy {
    static let marker = ".sync-conflict-"

    /// The document a conflict copy belongs to, or `nil` if `path` is not a conflict copy.
    static func documentPath(of path: String) -> String? {
        guard path.hasSuffix(".json"), let range = path.range(of: marker, options: .backwards) else { return nil }
        return String(path[..<range.lowerBound]) + ".json"
    }

    /// Every conflict copy under `root` (the state folder left out), sorted.
    static func all(in root: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var found: [String] = []
        while let item = walker.nextObject() as? String {
            if item == ".docsync" || item.hasPrefix(".docsync/") {
                walker.skipDescendants()
                continue
            }
            if documentPath(of: item) != nil { found.append(item) }
        }
        return found.sorted()
    }
}

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
        abstract: "Settle a conflict: keep the document as it is (mine) or take the conflict copy's version (theirs).",
        discussion: "mine: the conflict copy is deleted. theirs: the copy's content replaces the document (same id) and the copy is deleted; a running agent syncs the change.")

    enum Keep: String, ExpressibleByArgument, CaseIterable { case mine, theirs }

    @Argument(help: "The conflict copy (name.sync-conflict-YYYYMMDD-HHMMSS.json).")
    var file: String

    @Option(help: "mine or theirs.")
    var keep: Keep

    func validate() throws {
        guard ConflictCopy.documentPath(of: file) != nil else {
            throw ValidationError("\(file) is not a conflict copy (expected NAME.sync-conflict-YYYYMMDD-HHMMSS.json)")
        }
    }

    func run() async throws {
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
}
