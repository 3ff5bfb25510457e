import Foundation
import Synchronization

/// The built `docsync` binary, run as a child process: what end-to-end tests and the benchmark
/// drive. Output goes to files in `logDirectory`, so nothing blocks on a full pipe.
public final class DocsyncProcess: @unchecked Sendable {
    public let process: Process
    public let stdoutPath: String
    public let stderrPath: String

    /// The `docsync` executable next to the running test or benchmark binary (same build folder),
    /// or `$DOCSYNC_BIN`.
    public static var binary: String {
        if let bin = ProcessInfo.processInfo.environment["DOCSYNC_BIN"] { return bin }
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = me.deletingLastPathComponent()
        // Inside an .xctest bundle the runner may sit a level deeper.
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent("docsync").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return me.deletingLastPathComponent().appendingPathComponent("docsync").path
    }

    /// Runs `docsync arguments`, behind `prefix` (e.g. setpriv) when given.
    public convenience init(_ arguments: [String], environment: [String: String] = [:], logDirectory: String, name: String, prefix: [String] = []) throws {
        let command = prefix + [Self.binary] + arguments
        try self.init(executable: command[0], arguments: Array(command.dropFirst()), environment: environment, logDirectory: logDirectory, name: name)
    }

    /// Runs any executable the same way (the benchmark's baselines).
    public init(executable: String, arguments: [String], environment: [String: String] = [:], logDirectory: String, name: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["DOCSYNC_TOKEN"] = nil
        // Whatever runs the tests (a systemd unit, the journal) is not the child's service manager.
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"] { env[key] = nil }
        for (k, v) in environment { env[k] = v }
        process.environment = env
        stdoutPath = logDirectory + "/\(name).out"
        stderrPath = logDirectory + "/\(name).err"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { Leftovers.forget(pid: $0.processIdentifier) }
        try process.run()
        Leftovers.remember(pid: process.processIdentifier)
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    public var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The first line of output, once it has been written.
    public func firstLine(timeout: Duration = .seconds(30)) async throws -> String {
        var line: String?
        _ = await eventually(timeout: timeout, every: .milliseconds(10)) {
            if let first = stdout.split(separator: "\n").first { line = String(first) }
            return line != nil || !isRunning
        }
        guard let line else { throw ProcessFailure("no output from docsync \(process.arguments ?? []); stderr: \(stderr)") }
        return line
    }

    public func signal(_ sig: Int32) {
        if isRunning { kill(process.processIdentifier, sig) }
    }

    /// Waits for the process to exit; returns its status.
    @discardableResult
    public func wait(timeout: Duration = .seconds(60)) async -> Int32? {
        guard await eventually(timeout: timeout, every: .milliseconds(10), { !isRunning }) else { return nil }
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if it has not gone after `grace`.
    public func stop(grace: Duration = .seconds(10)) async {
        signal(SIGTERM)
        if await wait(timeout: grace) == nil {
            signal(SIGKILL)
            await wait()
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

public struct ProcessFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// Runs `docsync` to completion and returns (status, stdout, stderr).
public func runDocsync(_ arguments: [String], environment: [String: String] = [:], logDirectory: String) async throws -> (Int32, String, String) {
    let p = try DocsyncProcess(arguments, environment: environment, logDirectory: logDirectory, name: "run-\(UUID().uuidString.prefix(6))")
    guard let status = await p.wait(timeout: .seconds(120)) else {
        p.signal(SIGKILL)
        throw ProcessFailure("docsync \(arguments) did not finish")
    }
    return (status, p.stdout, p.stderr)
}

/// Child processes and temp folders still there when the test or benchmark process exits (a test
/// that stops its rig from a `defer`red task may end before the task runs): killed and removed by
/// an `atexit` handler, so no `docsync serve` or `watch` outlives the run.
enum Leftovers {
    private static let state = Mutex<(pids: Set<Int32>, folders: Set<String>, installed: Bool)>(([], [], false))

    static func remember(pid: Int32) { update { $0.pids.insert(pid) } }
    static func forget(pid: Int32) { update { $0.pids.remove(pid) } }
    static func remember(folder: String) { update { $0.folders.insert(folder) } }
    static func forget(folder: String) { update { $0.folders.remove(folder) } }

    private static func update(_ change: (inout (pids: Set<Int32>, folders: Set<String>, installed: Bool)) -> Void) {
        let install = state.withLock { s -> Bool in
            change(&s)
            defer { s.installed = true }
            return !s.installed
        }
        if install { atexit { Leftovers.cleanUp() } }
    }

    private static func cleanUp() {
        let (pids, folders) = state.withLock { s in (s.pids, s.folders) }
        for pid in pids { kill(pid, SIGKILL) }
        for folder in folders { try? FileManager.default.removeItem(atPath: folder) }
    }
}
