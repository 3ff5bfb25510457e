import Foundation

/// What the descriptors of process `pid` are open on (the targets of `/proc/PID/fd/*`: paths,
/// or `anon_inode:…`, `socket:[…]`), for tests that check what a process holds.
public func openFiles(pid: Int32) -> [String] {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
}
