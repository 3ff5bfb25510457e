#if canImport(Glibc)
import Glibc
#endif

/// The one gate every file the agent creates, replaces, renames or removes under the synced root
/// goes through.
///
/// A path from outside (a docType, an id, a trash name) is resolved from the root's descriptor one
/// component at a time with `openat(O_NOFOLLOW | O_DIRECTORY)`: a symlink anywhere on the way, or
/// a `..`, is refused instead of followed. The operation then runs on the folder's descriptor
/// (`renameat2`, `openat`, `unlinkat` with a bare name), so a symlink planted on the path after the
/// folder was opened changes nothing: the write lands in the folder that was checked, or not at all.
/// The root itself is the user's choice and may be a symlink.
public final class PathGate: Sendable {
    /// The synced root as the user named it.
    public let root: String
    private let rootFD: Int32
    /// Where the temporaries of files written through the gate are made (see ``GatedFolder/staging``).
    private let staging: (folder: GatedFolder, device: UInt64)?

    /// - Parameter staging: a folder below the root (the agent's `.docsync/staging`) that holds
    ///   every temporary of a file written through the gate while it is written, so that none is
    ///   ever in the tree where `git add -A` or another watcher would see it.
    public init(root: String, staging: String? = nil) throws(FileSystemError) {
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSystemError("open", path: root) }
        self.root = root
        self.rootFD = fd
        guard let staging else {
            self.staging = nil
            return
        }
        do throws(FileSystemError) {
            let (opened, walked) = try Self.walk(staging, from: fd, root: root, create: true)
            var st = stat()
            let folder = GatedFolder(fd: opened, path: walked)
            self.staging = fstat(opened, &st) == 0 ? (folder, UInt64(st.st_dev)) : nil
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(rootFD) }

    /// Whether the folder the gate opened was deleted (no name links to it any more) or is no
    /// longer what its path names (moved away, replaced): nothing written through the gate would
    /// reach the user.
    public var rootIsGone: Bool {
        var held = stat()
        var named = stat()
        guard fstat(rootFD, &held) == 0, held.st_nlink > 0 else { return true }
        guard stat(root, &named) == 0 else { return true }
        return named.st_ino != held.st_ino || named.st_dev != held.st_dev
    }

    /// The folder `relative` below the root (`""` is the root), made (with its parents) when
    /// `create` is set. Throws for a symlink, a file or `..` on the way.
    public func folder(_ relative: some StringProtocol, create: Bool) throws(FileSystemError) -> GatedFolder {
        let (fd, walked) = try Self.walk(relative, from: rootFD, root: root, create: create)
        return GatedFolder(fd: fd, path: walked, staging: stagingFor(fd))
    }

    /// Opens `relative` from the root's descriptor one component at a time; the folder's
    /// descriptor and its path.
    private static func walk(_ relative: some StringProtocol, from rootFD: Int32, root: String, create: Bool) throws(FileSystemError) -> (Int32, String) {
        var fd = dup(rootFD)
        guard fd >= 0 else { throw FileSystemError("dup", path: root) }
        var walked = root
        for component in relative.split(separator: "/", omittingEmptySubsequences: true) {
            let name = String(component)
            walked += "/" + name
            guard name != "..", name != ".", !name.utf8.contains(0) else {
                close(fd)
                throw FileSystemError("refusing a path that leaves its folder:", path: walked, code: EPERM)
            }
            var next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT && create {
                if mkdirat(fd, name, 0o755) != 0 && errno != EEXIST {
                    let e = FileSystemError("mkdir", path: walked)
                    close(fd)
                    throw e
                }
                next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            guard next >= 0 else {
                // ELOOP: a symlink; ENOTDIR: a file (or, with O_NOFOLLOW, a symlink on some kernels).
                let code = errno
                close(fd)
                if code == ELOOP || code == ENOTDIR {
                    throw FileSystemError("refusing to write through a symlink or a file at", path: walked, code: code)
                }
                throw FileSystemError("open folder", path: walked, code: code)
            }
            close(fd)
            fd = next
        }
        return (fd, walked)
    }

    /// The staging folder, for a folder on the same file system (a rename cannot cross one).
    private func stagingFor(_ fd: Int32) -> GatedFolder? {
        guard let staging else { return nil }
        var st = stat()
        return fstat(fd, &st) == 0 && UInt64(st.st_dev) == staging.device && st.st_ino != staging.folder.inode ? staging.folder : nil
    }

    /// The file `relative` below the root: its folder opened through ``folder(_:create:)``.
    public func file(_ relative: String, createFolders: Bool = false) throws(FileSystemError) -> GatedFile {
        let slash = relative.lastIndex(of: "/")
        let name = slash.map { String(relative[relative.index(after: $0)...]) } ?? relative
        let folder = try folder(slash.map { relative[..<$0] } ?? "", create: createFolders)
        return try GatedFile(folder, name)
    }
}

/// An open folder reached through the gate (or, for a path the user typed, opened as given).
public final class GatedFolder: Sendable {
    public let fd: Int32
    /// Its path, for messages.
    public let path: String
    /// Where temporaries of files written into this folder are made (on the same file system);
    /// `nil`: beside the file.
    public let staging: GatedFolder?
    let inode: UInt64

    init(fd: Int32, path: String, staging: GatedFolder? = nil) {
        self.fd = fd
        self.path = path
        self.staging = staging
        var st = stat()
        inode = fstat(fd, &st) == 0 ? UInt64(st.st_ino) : 0
    }

    /// Opens `path` as it is, symlinks followed: for a path the user named on the command line,
    /// never for one built from what a server sent.
    public convenience init(trusted path: String) throws(FileSystemError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSystemError("open", path: path) }
        self.init(fd: fd, path: path)
    }

    deinit { close(fd) }

    /// The names in this folder, without stat.
    public func entries() -> [DirectoryEntry] {
        let copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let dir = fdopendir(copy) else { return [] }
        defer { closedir(dir) }
        return Directory.entries(of: dir)
    }
}

/// One name in a gated folder: what the write operations of ``FileSystem`` act on.
public struct GatedFile: Sendable {
    public let folder: GatedFolder
    /// A single path component.
    public let name: String

    public init(_ folder: GatedFolder, _ name: String) throws(FileSystemError) {
        // Byte checks: `String.contains(String)` goes through Foundation's search, a percent of
        // a pull's CPU at one call per file written.
        guard !name.isEmpty, name != ".", name != "..", !name.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 }) else {
            throw FileSystemError("refusing the file name", path: folder.path + "/" + name, code: EINVAL)
        }
        self.folder = folder
        self.name = name
    }

    /// Its path, for messages.
    public var path: String { folder.path + "/" + name }

    /// A sibling in the same folder.
    public func sibling(_ other: String) throws(FileSystemError) -> GatedFile { try GatedFile(folder, other) }

    /// For a path the user named: its folder opened as given.
    public static func trusted(_ path: String) throws(FileSystemError) -> GatedFile {
        let slash = path.lastIndex(of: "/")
        let folder = try GatedFolder(trusted: slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? ".")
        return try GatedFile(folder, slash.map { String(path[path.index(after: $0)...]) } ?? path)
    }
}
