import Foundation

/// What `/proc` says about a process: CPU time, peak memory, bytes read, wakeups.
struct ProcessStats {
    var cpuSeconds: Double
    /// The part of `cpuSeconds` spent in the kernel (`stime`).
    var systemSeconds = 0.0
    /// CPU of the children it waited for (`cutime` + `cstime`): git's processes, for instance.
    var childCPUSeconds = 0.0
    var peakRSSBytes: Int
    /// Bytes the process asked `read(2)` for (`rchar`): files, sockets and the index alike.
    var readBytes: Int
    /// Voluntary context switches per thread: how often each went to sleep and woke again.
    var wakeupsByThread: [String: Int]
    /// Time on a CPU per thread, in nanoseconds (`schedstat`): finer than the 10 ms ticks of `stat`.
    var cpuNanosByThread: [String: Int]

    /// CPU time since `earlier`, in nanoseconds: threads alive at both readings by difference,
    /// threads started since in full (a thread that ended in between is not seen).
    func cpuNanoseconds(since earlier: ProcessStats) -> Int {
        cpuNanosByThread.reduce(0) { sum, t in sum + max(0, t.value - (earlier.cpuNanosByThread[t.key] ?? 0)) }
    }

    /// Wakeups since `earlier`, over the threads alive at both readings.
    func wakeups(since earlier: ProcessStats) -> Int {
        wakeupsByThread.reduce(0) { sum, t in sum + max(0, t.value - (earlier.wakeupsByThread[t.key] ?? t.value)) }
    }

    /// The value of a `/proc/PID/status` line such as `VmRSS:   1234 kB`, in KiB.
    static func kibibytes(_ key: String, in status: String) -> Int? {
        status.split(separator: "\n").first { $0.hasPrefix(key) }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func read(pid: Int32) -> ProcessStats? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14 and stime 15 (1-based, whole line).
        guard fields.count > 15, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        let children = (Double(fields[13]) ?? 0) + (Double(fields[14]) ?? 0)
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let hwm = kibibytes("VmHWM:", in: status) ?? 0
        let io = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
        let rchar = io.split(separator: "\n").first { $0.hasPrefix("rchar:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) } ?? 0
        var wakeups: [String: Int] = [:]
        var cpu: [String: Int] = [:]
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            for task in tasks {
                let sched = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
                cpu[task] = sched.split(separator: " ").first.flatMap { Int($0) } ?? 0
                let s = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
                wakeups[task] = s.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
                    .flatMap { Int($0.split(separator: "\t").last ?? "") } ?? 0
            }
        }
        return ProcessStats(
            cpuSeconds: (utime + stime) / ticksPerSecond, systemSeconds: stime / ticksPerSecond, childCPUSeconds: children / ticksPerSecond, peakRSSBytes: hwm * 1024, readBytes: rchar,
            wakeupsByThread: wakeups, cpuNanosByThread: cpu)
    }
}

/// Nanoseconds on the monotonic clock.
func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let rank = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
    return sorted[rank]
}
