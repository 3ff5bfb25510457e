import DocsyncFiles
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A repository's object folder, where the agent writes git objects itself, as `git hash-object
/// -w` writes a loose object: `<kind> <size>\0<content>`, zlib-framed (stored, not compressed,
/// as the agent's trees always were), named by its hash, in `objects/xx/`, made read-only, put
/// in place by a hard link from a temporary so that an object already there is never replaced.
///
/// A trickle's commit into a folder of 100,000 spent about 38 ms of git's CPU in two
/// `hash-object` processes: the folder's tree (4.7 MB) hashed twice with git's
/// collision-detecting SHA-1. In process it is hashed once, as it is framed (swift-crypto's
/// SHA-1, with the processor's SHA instructions), in about 5 ms.
///
/// Only where git would write the object plainly: not in a shared repository (git gives what it
/// writes the group's permissions), not where objects are flushed to disk (`core.fsync`,
/// `core.fsyncObjectFiles`), not where git keeps a second object format beside the first
/// (`extensions.compatObjectFormat`). There the agent asks `hash-object` as before.
struct LooseObjectStore: Sendable {
    /// The repository's object folder (`<common dir>/objects`).
    let folder: String
    /// The binary size of its hashes: 20 (SHA-1) or 32 (SHA-256).
    let hashSize: Int

    /// The settings under which git must write the objects itself (lowercase, as git's
    /// `config --get-regexp` names them): a commit encoding is one, as commit-tree names it in
    /// each commit.
    static let gitsOwn = #"^(core\.(sharedrepository|fsync|fsyncobjectfiles)|extensions\.compatobjectformat|i18n\.commitencoding)$"#

    /// The store of the repository whose common folder is `commonDir`, for objects of
    /// `format` (`sha1`, `sha256`); `nil` for a format it does not know.
    init?(commonDir: String, format: String) {
        switch format {
        case "sha1": hashSize = 20
        case "sha256": hashSize = 32
        default: return nil
        }
        folder = commonDir + "/objects"
    }

    /// A new temporary file in the object folder, open for reading and writing, read-only for
    /// every later open (a loose object's mode, less the umask). Named as git names its own
    /// (`tmp_obj_`), so that `git prune` removes one a crash left behind.
    func temporary() throws(GitError) -> (fd: Int32, path: String) {
        try Self.temporary(in: folder, prefix: "tmp_obj_")
    }

    /// A new temporary file in `folder` whose name starts with `prefix` (git's `tmp_obj_` or
    /// `tmp_pack_`), made as ``temporary()`` makes one.
    static func temporary(in folder: String, prefix: String) throws(GitError) -> (fd: Int32, path: String) {
        for _ in 0..<8 {
            let path = folder + "/" + prefix + "docsync_" + UUID().uuidString.prefix(12)
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o444)
            if fd >= 0 { return (fd, path) }
            guard errno == EEXIST else { throw failure("cannot make a temporary file in", folder) }
        }
        throw GitError("cannot make a temporary file in \(folder): every name tried was taken")
    }

    /// Where the loose object `hash` (hex) is, or would be.
    func path(of hash: String) -> String {
        folder + "/" + hash.prefix(2) + "/" + hash.dropFirst(2)
    }

    /// Puts the finished object at `temporary` in place under `hash` (hex). An object already
    /// there stays as it is (the same content by its name) and has its time renewed, as git
    /// renews it, so that a `git gc` does not take it as long unused. Where the file system has
    /// no hard links, a rename, as git falls back to.
    func place(_ temporary: String, hash: String) throws(GitError) {
        let dir = folder + "/" + hash.prefix(2)
        if mkdir(dir, 0o777) != 0 && errno != EEXIST { throw Self.failure("cannot make", dir) }
        let path = path(of: hash)
        if link(temporary, path) == 0 { return }
        if errno == EEXIST {
            utimes(path, nil)
            return
        }
        if rename(temporary, path) != 0 { throw Self.failure("cannot put a git object at", path) }
    }

    /// Writes all of `bytes` to the file `fd` (of the name `file`, for the error).
    static func write(_ bytes: ArraySlice<UInt8>, to fd: Int32, file: String) throws(GitError) {
        let written = bytes.withUnsafeBytes { raw in Result { () throws(FileSystemError) in try FileSystem.writeAll(raw, to: fd, path: file) } }
        if case .failure(let error) = written { throw GitError("\(error)") }
    }

    static func failure(_ what: String, _ path: String) -> GitError {
        GitError("\(what) \(path): \(String(cString: strerror(errno)))")
    }
}
