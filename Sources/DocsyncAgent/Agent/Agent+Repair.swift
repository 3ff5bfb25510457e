import DocsyncIndex
import DocsyncModel
import Foundation

/// `docsync repair`: a damaged index moved aside, so that the next run builds one again from the
/// folder and the server. A file the server also holds was never in agreement with it in the new
/// index: where they differ, the server's version goes into the file and the file's beside it as
/// a conflict copy (``ChangeApplier``'s rule for unagreed versions), never sent over the server's.
extension Agent {
    /// The index and its log moved into `.docsync/damaged-<time>/`, while no agent runs on the
    /// folder (its lock is taken for the move): where they went, or nil when there was none.
    public static func moveIndexAside(root: String) throws -> String? {
        let held = try FolderLock(root: root)
        defer { withExtendedLifetime(held) {} }
        let state = Index.stateDirectory(root: root)
        let names = ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"].filter { FileManager.default.fileExists(atPath: state + "/" + $0) }
        guard !names.isEmpty else { return nil }
        let stamp = Timestamp(unixMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)).compactUTC
        let folder = state + "/damaged-" + stamp
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in names { try FileManager.default.moveItem(atPath: state + "/" + name, toPath: folder + "/" + name) }
        return folder
    }
}
