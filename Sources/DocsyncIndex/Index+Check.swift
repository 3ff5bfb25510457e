import GRDB

/// A damaged index is refused at start, with the way out: an agent that went on with it took its
/// stale rows for the truth, and a document unchanged here overwrote the server's newer version
/// for everyone (trust finding, fourth round, 10).
public struct IndexDamaged: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var detail: String

    public var description: String {
        "the index \(path) is damaged (\(detail)); nothing was sent. `docsync repair DIR --endpoint URL --token-file F` rebuilds it "
            + "from the folder and the server: a file that differs from the server's version is kept as a conflict copy beside it, never sent over it"
    }

    /// SQLite's words for a file that is not a sound database.
    static func isDamage(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return [ResultCode.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode)
    }
}

extension Index {
    /// Opens the index as ``open(root:footprint:)`` does, then checks it (`PRAGMA quick_check`,
    /// every page read once): a damaged index, or one SQLite cannot open, is ``IndexDamaged``.
    public static func openChecked(root: String, footprint: Footprint = .roomy) throws -> Index {
        let path = stateDirectory(root: root) + "/index.sqlite"
        let index: Index
        do {
            index = try open(root: root, footprint: footprint)
        } catch where IndexDamaged.isDamage(error) {
            throw IndexDamaged(path: path, detail: "\(error)")
        }
        let verdict: [String]
        do {
            verdict = try index.readSync { try String.fetchAll($0.db, sql: "PRAGMA quick_check(5)") }
        } catch {
            throw IndexDamaged(path: path, detail: "\(error)")
        }
        guard verdict == ["ok"] else { throw IndexDamaged(path: path, detail: verdict.joined(separator: "; ")) }
        return index
    }
}
