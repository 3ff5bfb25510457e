import Foundation

/// Whether one of the user's git commands is running in a work tree, seen in `/proc`: a process
/// named `git` whose working folder is in the tree. docsync takes the index's lock only while
/// none is, and for microseconds, so the user's command never finds it taken.
enum GitActivity {
    static func running(in workTree: String) -> Bool {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return false }
        let own = getpid()
        for entry in entries {
            guard let pid = Int32(entry), pid != own else { continue }
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8), comm.hasPrefix("git") else { continue }
            guard let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd") else { continue }
            if cwd == workTree || cwd.hasPrefix(workTree + "/") { return true }
        }
        return false
    }
}
