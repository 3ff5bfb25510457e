import Foundation

/// The kernel's inotify settings (`doctor` checks them, the metrics report the watch limit).
public enum InotifySettings {
    /// The number in `/proc/sys/fs/inotify/NAME`.
    public static func value(_ name: String) -> Int? {
        (try? String(contentsOfFile: "/proc/sys/fs/inotify/\(name)", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// The inotify instances open in the processes whose descriptors this user may read.
    public static func instancesInUse() -> Int {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var count = 0
        for pid in processes where pid.first?.isNumber == true {
            let dir = "/proc/\(pid)/fd"
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                if (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + fd)) == "anon_inode:inotify" { count += 1 }
            }
        }
        return count
    }
}
