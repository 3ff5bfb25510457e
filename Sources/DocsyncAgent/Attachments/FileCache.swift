import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Downloaded files by content, in `.docsync/files/<sha256[0..2]>/<sha256>`: a file is fetched
/// once per hash, however many documents or versions name it, and a download cut short leaves
/// only a temporary in `.docsync/files/tmp/` (cleared at the next start). The tree's copy is a
/// hard link where the file system allows, so the cache costs no second copy of the bytes; the
/// index keeps each entry's stat, and an entry changed in place through the tree is not used.
struct FileCache: Sendable {
    let root: String
    var temporaryFolder: String { root + "/tmp" }

    init(folder: String) {
        self.root = Index.stateDirectory(root: folder) + "/files"
    }

    func path(of sha256: String) -> String { "\(root)/\(sha256.prefix(2))/\(sha256)" }

    /// Drops temporaries of downloads that did not finish.
    func clearTemporaries() {
        for entry in FileSystem.list(temporaryFolder) ?? [] { unlink(temporaryFolder + "/" + entry.name) }
    }

    /// A new temporary file, open for writing (and reading: it is hashed as it is written).
    func temporary() throws(FileSystemError) -> (path: String, fd: Int32) {
        try FileSystem.makeDirectories(temporaryFolder)
        let path = "\(temporaryFolder)/\(UUID().uuidString.lowercased()).part"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw FileSystemError("create", path: path) }
        return (path, fd)
    }

    /// Moves a complete, flushed temporary to its content address.
    func adopt(_ temporary: String, sha256: String) throws(FileSystemError) {
        let destination = path(of: sha256)
        try FileSystem.makeDirectories("\(root)/\(sha256.prefix(2))")
        guard rename(temporary, destination) == 0 else {
            let error = FileSystemError("rename", path: destination)
            unlink(temporary)
            throw error
        }
    }

    /// Copies a file already in the folder (the same content attached elsewhere) into the cache;
    /// false if it cannot, or no longer holds that content.
    func adoptCopy(of source: String, sha256: String) -> Bool {
        let destination = path(of: sha256)
        do {
            try FileSystem.makeDirectories("\(root)/\(sha256.prefix(2))")
            try FileSystem.placeCopy(of: source, at: GatedFile.trusted(destination))
        } catch {
            return false
        }
        // Checked after copying: the file may have changed since it was hashed.
        if (try? ContentHash.sha256Hex(fileAt: destination))?.hash == sha256 { return true }
        unlink(destination)
        return false
    }
}
