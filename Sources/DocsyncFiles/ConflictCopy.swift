import Foundation

/// Conflict copies: `<name>.sync-conflict-<yyyyMMdd-HHmmss>.json` beside `<name>.json`.
public enum ConflictCopy {
    public static let marker = ".sync-conflict-"

    /// The document a conflict copy belongs to, or `nil` if `path` is not a conflict copy.
    public static func documentPath(of path: String) -> String? {
        guard path.hasSuffix(".json"), let range = path.range(of: marker, options: .backwards) else { return nil }
        return String(path[..<range.lowerBound]) + ".json"
    }

    /// Every conflict copy under `root` (the state folder left out), sorted.
    public static func all(in root: String) -> [String] {
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
