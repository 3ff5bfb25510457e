import Foundation

/// Moves the checked-out branch to a new commit and the user's index with it, in one short step
/// under git's own locks (`index.lock`, then the ref's `.lock`), each checked against what the
/// new index and commit were made from: a user's command that ran meanwhile makes the step start
/// over, never lose its work. Nothing slow happens under the locks (no process is started), so a
/// user's git command does not find them taken.
enum HeadSwap {
    enum Outcome: Equatable {
        case done
        /// The index or the branch changed since the plan was made: plan again.
        case changed
        /// A git command of the user's runs, or holds a lock: try again shortly.
        case busy(String)
    }

    struct Plan {
        var gitDir: String
        var commonDir: String
        var workTree: String
        var ref: String
        var old: String?
        var new: String
        /// The index the new one was made from, as `stat` saw it (`nil`: there was none).
        var indexBefore: IndexFile.Stamp?
        /// The new index: a file in the git folder, linked as the index's lock.
        var indexAfter: String
        var reflog: String
    }

    static func swap(_ plan: Plan) throws(GitError) -> Outcome {
        if GitActivity.running(in: plan.workTree) { return .busy("a git command is running in the repository") }
        let indexPath = plan.gitDir + "/index"
        let refPath = plan.commonDir + "/" + plan.ref
        // Everything that can be done before the locks is: the branch's new value is written
        // to a file of our own first, so the locks are held for links, a stat and renames only
        // (a thread paused by a loaded machine inside that window is what a user's command meets).
        try? FileManager.default.createDirectory(atPath: (refPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let refStaged = try LockFile.stage(Array((plan.new + "\n").utf8), gitDir: plan.gitDir)
        defer { unlink(refStaged) }
        guard let indexLock = try LockFile(indexPath, linking: plan.indexAfter) else { return .busy("\(indexPath).lock is held") }
        defer { indexLock.release() }
        guard let refLock = try LockFile(refPath, linking: refStaged) else { return .busy("\(refPath).lock is held") }
        defer { refLock.release() }
        // Compared by `stat`, not read: git replaces the index by a rename, so any write of it
        // changes the inode, the size or the times; the locks are held for microseconds.
        guard IndexFile.stamp(indexPath) == plan.indexBefore, currentValue(of: plan.ref, commonDir: plan.commonDir) == plan.old else { return .changed }
        try refLock.commit()
        try indexLock.commit()
        appendReflog(plan)
        return .done
    }

    /// Both locks, taken empty before the commit is made and held while it is: the last resort
    /// when the user's commands leave no gap for ``swap(_:)`` (see ``GitHistoryWriter``). A
    /// command of the user's started meanwhile meets them, as it would meet another git command.
    struct Held {
        let index: LockFile
        let ref: LockFile

        /// `nil` when either is held by someone else.
        static func take(gitDir: String, commonDir: String, ref: String) throws(GitError) -> Held? {
            guard let index = try LockFile(taking: gitDir + "/index") else { return nil }
            let refPath = commonDir + "/" + ref
            try? FileManager.default.createDirectory(atPath: (refPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            guard let refLock = try LockFile(taking: refPath) else {
                index.release()
                return nil
            }
            return Held(index: index, ref: refLock)
        }

        /// Writes the plan's branch and index into the locks and puts them in place (the branch
        /// first, as ``swap(_:)`` does).
        func commit(_ plan: Plan) throws(GitError) {
            try ref.fill(Array((plan.new + "\n").utf8))
            try index.fill(from: plan.indexAfter)
            try ref.commit()
            try index.commit()
            HeadSwap.appendReflog(plan)
        }

        func release() {
            ref.release()
            index.release()
        }
    }

    /// The commit a branch points at: its loose file, else its line in `packed-refs`.
    static func currentValue(of ref: String, commonDir: String) -> String? {
        if let loose = try? String(contentsOfFile: commonDir + "/" + ref, encoding: .utf8) {
            return loose.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let packed = try? String(contentsOfFile: commonDir + "/packed-refs", encoding: .utf8) else { return nil }
        for line in packed.split(separator: "\n") where line.hasSuffix(" " + ref) {
            return String(line.prefix { $0 != " " })
        }
        return nil
    }

    fileprivate static func appendReflog(_ plan: Plan) {
        let zeros = String(repeating: "0", count: plan.new.count)
        let line = "\(plan.old ?? zeros) \(plan.new) docsync <docsync@localhost> \(Int(Date().timeIntervalSince1970)) +0000\t\(plan.reflog)\n"
        for log in [plan.commonDir + "/logs/" + plan.ref, plan.gitDir + "/logs/HEAD"] {
            guard let handle = FileHandle(forWritingAtPath: log) else { continue }
            _ = try? handle.seekToEnd()
            try? handle.write(contentsOf: Data(line.utf8))
            try? handle.close()
        }
    }
}

/// Git's lock protocol: `<file>.lock` created exclusively; its content replaces the file by a
/// rename, or it is removed. The content is written before the lock exists, to a file of our own
/// in the git folder (never among the refs, where git would take it for one), which is then
/// hard-linked as the lock (`link` fails if the name exists, as
/// `O_EXCL` does): the lock is there for the few system calls between the link and the rename,
/// not for the writing of a large index, so a user's command started meanwhile rarely meets it.
final class LockFile {
    let path: String
    private var held = false
    private var committed = false

    /// `content` written to a new file of our own in `gitDir`, to be linked as a lock; the
    /// caller removes it.
    static func stage(_ content: [UInt8], gitDir: String) throws(GitError) -> String {
        let staged = gitDir + "/docsync-lock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try writeWhole(content, to: staged, flags: O_CREAT)
        return staged
    }

    /// Takes the lock on `target` holding the file at `staged` (in the same folder tree), by a
    /// link: `staged` stays where it is; `nil` when someone else holds the lock.
    init?(_ target: String, linking staged: String) throws(GitError) {
        path = target + ".lock"
        guard link(staged, path) == 0 else {
            if errno == EEXIST { return nil }
            throw GitError("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        held = true
    }

    /// Takes the lock on `target` empty (`O_EXCL`), to be filled later; `nil` when someone else
    /// holds it.
    init?(taking target: String) throws(GitError) {
        path = target + ".lock"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 && errno == EEXIST { return nil }
        guard fd >= 0 else { throw GitError("cannot create \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        held = true
    }

    /// Writes `content` into the lock taken empty.
    func fill(_ content: [UInt8]) throws(GitError) {
        try Self.writeWhole(content, to: path, flags: 0)
    }

    /// Puts the file at `staged` (in the same folder tree) in place of the lock taken empty.
    func fill(from staged: String) throws(GitError) {
        guard rename(staged, path) == 0 else { throw GitError("cannot rename \(staged) to \(path): \(String(cString: strerror(errno)))") }
    }

    /// `content` as the whole of the file at `path` (`flags`: `O_CREAT` to make it). Not synced
    /// to disk, as git does not sync its index and refs by default.
    private static func writeWhole(_ content: [UInt8], to path: String, flags: Int32) throws(GitError) {
        let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | flags, 0o644)
        guard fd >= 0 else { throw GitError("cannot write \(path): \(String(cString: strerror(errno)))") }
        let written = content.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == content.count else { throw GitError("cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    func commit() throws(GitError) {
        guard rename(path, String(path.dropLast(5))) == 0 else { throw GitError("cannot rename \(path): \(String(cString: strerror(errno)))") }
        committed = true
    }

    func release() {
        if held && !committed { unlink(path) }
    }
}
