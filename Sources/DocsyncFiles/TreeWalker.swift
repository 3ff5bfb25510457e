#if canImport(Glibc)
import Glibc
#endif
import DocsyncModel

/// Walks a folder of the synced tree, reporting files and folders by their path relative to the
/// root. Ignored names (hidden files and folders, editors' backups, conflict copies) are skipped,
/// and so are symlinks: following them could lead outside the synced root.
public struct TreeWalker: Sendable {
    public let root: String
    /// The user's `.docsyncignore`, on top of the built-in ignores.
    public let ignore: IgnoreRules

    public init(root: String, ignore: IgnoreRules = IgnoreRules()) {
        self.root = root
        self.ignore = ignore
    }

    /// Reads `<root>/.docsyncignore` (empty rules when there is none), followed by `extra` lines
    /// in the same form (a config file's `ignore:` list).
    public static func ignoreRules(root: String, extra: [String] = []) -> IgnoreRules {
        let text = (try? String(contentsOfFile: root + "/.docsyncignore", encoding: .utf8)) ?? ""
        let lines = extra.isEmpty ? text : text + "\n" + extra.joined(separator: "\n")
        return lines.isEmpty ? IgnoreRules() : IgnoreRules(text: lines)
    }

    /// Whether a path is left alone: a built-in ignore on any component, or the user's rules.
    public func isIgnored(_ relative: String, isDirectory: Bool) -> Bool {
        if relative.split(separator: "/").contains(where: { DocumentRules.isIgnoredName($0) }) { return true }
        return !ignore.isEmpty && ignore.isIgnored(relative, isDirectory: isDirectory)
    }

    public func absolute(_ relative: String) -> String {
        relative.isEmpty ? root : root + "/" + relative
    }

    /// A file found by the walk. `nameIsUTF8` is false for names that are not valid UTF-8: they
    /// can be reported but not synced. `info` is ``EntryInfo/unknownFile`` where the walk did not
    /// `lstat` the file.
    public struct Found: Sendable {
        public var path: String
        public var info: EntryInfo
        public var nameIsUTF8: Bool
    }

    /// Every regular, non-ignored file at or below `relative`, and (through `onDirectory`) every
    /// folder, parents before children.
    public func walk(_ relative: String = "", removeStaleTemporaries: Bool = false, onDirectory: (String) -> Void = { _ in }) -> [Found] {
        var files: [Found] = []
        var stack = [relative]
        while let dir = stack.popLast() {
            onDirectory(dir)
            let listed = list(dir, removeStaleTemporaries: removeStaleTemporaries)
            files += listed.files
            stack += listed.folders
        }
        return files
    }

    /// One folder's regular, non-ignored files and its subfolders. Without `statFiles`, a file
    /// whose directory entry says it is regular is not `lstat`ed: its info is zeroed.
    func list(_ dir: String, removeStaleTemporaries: Bool, statFiles: Bool = true) -> (files: [Found], folders: [String]) {
        var files: [Found] = []
        var folders: [String] = []
        guard let folder = Directory(absolute(dir)) else { return ([], []) }
        for entry in folder.entries() {
            if DocumentRules.isIgnoredName(entry.name) {
                if removeStaleTemporaries, FileSystem.isStaleTemporary(entry.name) { unlink(absolute(dir.isEmpty ? entry.name : dir + "/" + entry.name)) }
                continue
            }
            let rel = dir.isEmpty ? entry.name : dir + "/" + entry.name
            if !ignore.isEmpty && ignore.isIgnored(rel, isDirectory: entry.type == UInt8(DT_DIR)) { continue }
            if entry.type == UInt8(DT_DIR) {
                folders.append(rel)
                continue
            }
            if entry.type != UInt8(DT_REG) && entry.type != UInt8(DT_UNKNOWN) { continue }
            if !entry.utf8 {
                // Its name cannot be turned back into a path string: report it from the
                // directory entry alone, so the user learns why it is not synced. Its path has
                // `//` before the name, which no real path has: a file whose valid name reads
                // the same (`\xFF.json` typed out) keeps its own index row.
                if entry.type == UInt8(DT_REG) {
                    files.append(Found(path: dir + "//" + entry.name, info: .unknownFile, nameIsUTF8: false))
                }
                continue
            }
            if !statFiles && entry.type == UInt8(DT_REG) {
                files.append(Found(path: rel, info: .unknownFile, nameIsUTF8: true))
                continue
            }
            guard let info = folder.info(entry.name) else { continue }
            switch info.kind {
            case .file: files.append(Found(path: rel, info: info, nameIsUTF8: entry.utf8))
            case .directory: folders.append(rel)
            default: break
            }
        }
        return (files, folders)
    }
}
