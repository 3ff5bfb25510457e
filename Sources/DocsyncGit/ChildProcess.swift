import CGlibcExtras
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A program run to its end: its input written, its output and errors collected, its status.
///
/// Not Foundation's `Process`, for two reasons found in the agent:
/// - A child inherits the spawning thread's signal mask, and the agent's threads block SIGTERM
///   and SIGINT (libdispatch's signal sources take them that way), so a `git` it started could
///   not be stopped by the SIGTERM that `systemctl stop` sends the whole service. Here the child
///   starts with nothing blocked and every signal at its default.
/// - Writing to a pipe whose reader has exited raises SIGPIPE, which kills the agent: a git
///   command that fails before reading its input (an index another process has locked) took the
///   agent with it. Here the input goes through a socket, written with `MSG_NOSIGNAL`: the
///   write fails, and git's own message says why.
enum ChildProcess {
    struct Finished: Sendable {
        /// The exit status; 128 + the signal's number for a child a signal ended, as a shell says.
        var status: Int32
        var stdout: [UInt8]
        var stderr: [UInt8]
    }

    /// Runs `executable` with `arguments` (without the program's name) in `environment`, `input`
    /// on its standard input (none: an empty one), and waits for it to end. `output`, when given,
    /// is handed the standard output as it comes (then not kept in ``Finished/stdout``).
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], input: [UInt8]?, output: ((ArraySlice<UInt8>) -> Void)? = nil
    ) throws(GitError) -> Finished {
        let ends = try Ends()
        let pid: pid_t
        do {
            pid = try spawn(executable, [executable] + arguments, environment: environment, ends: ends)
        } catch {
            ends.closeAll()
            throw error
        }
        ends.closeChildSides()
        let errors = Mutex<[UInt8]>([])
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            (input ?? []).withUnsafeBytes { _ = writeAll($0, to: ends.input) }
            close(ends.input)
        }
        DispatchQueue.global().async(group: group) {
            let bytes = readAll(ends.errors)
            errors.withLock { $0 = bytes }
        }
        let out = readAll(ends.output, into: output)
        group.wait()
        close(ends.output)
        close(ends.errors)
        return Finished(status: waitForExit(pid), stdout: out, stderr: errors.withLock { $0 })
    }

    /// The descriptors between parent and child: the input a socket pair (see the type's note),
    /// output and errors pipes; every one close-on-exec, the child's sides moved to 0, 1 and 2.
    struct Ends: Sendable {
        let input: Int32, childInput: Int32
        let output: Int32, childOutput: Int32
        let errors: Int32, childErrors: Int32

        init() throws(GitError) {
            var pair: [Int32] = [-1, -1]
            var out: [Int32] = [-1, -1]
            var err: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                throw GitError("cannot run git: socketpair: \(String(cString: strerror(errno)))")
            }
            guard docsync_pipe_cloexec(&out) == 0, docsync_pipe_cloexec(&err) == 0 else {
                let reason = String(cString: strerror(errno))
                for fd in pair + out + err where fd >= 0 { close(fd) }
                throw GitError("cannot run git: pipe: \(reason)")
            }
            // An agent started with 0, 1 or 2 closed gets them back here: the child's ends are
            // moved above them, so that moving them onto 0, 1 and 2 cannot take one for another.
            (input, childInput) = (pair[0], Self.aboveStandard(pair[1]))
            (output, childOutput) = (out[0], Self.aboveStandard(out[1]))
            (errors, childErrors) = (err[0], Self.aboveStandard(err[1]))
        }

        /// `fd` itself when it is 3 or above; else a close-on-exec copy from 3 up, `fd` closed.
        private static func aboveStandard(_ fd: Int32) -> Int32 {
            guard fd < 3 else { return fd }
            let moved = fcntl(fd, F_DUPFD_CLOEXEC, 3)
            guard moved >= 0 else { return fd }
            close(fd)
            return moved
        }

        func closeChildSides() {
            for fd in [childInput, childOutput, childErrors] { close(fd) }
        }

        func closeAll() {
            closeChildSides()
            for fd in [input, output, errors] { close(fd) }
        }
    }

    /// Starts the child: its ends on 0, 1 and 2, every other descriptor closed, no signal
    /// blocked and every signal at its default disposition.
    static func spawn(_ path: String, _ argv: [String], environment: [String: String], ends: Ends) throws(GitError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends.childInput, 0)
        posix_spawn_file_actions_adddup2(&actions, ends.childOutput, 1)
        posix_spawn_file_actions_adddup2(&actions, ends.childErrors, 2)
        docsync_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cArguments + cEnvironment { free(p) } }
        var pid: pid_t = 0
        let failed = posix_spawn(&pid, path, &actions, &attributes, cArguments, cEnvironment)
        guard failed == 0 else { throw GitError("cannot run git: \(String(cString: strerror(failed)))") }
        return pid
    }

    /// Writes `bytes` to the socket `fd` until done or the reader is gone (no SIGPIPE): `false`
    /// when the child stopped reading (exited, or closed its input; its status says why).
    @discardableResult
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            if n > 0 {
                sent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Everything `fd` gives until its end (handed to `sink` as it comes, where there is one).
    static func readAll(_ fd: Int32, into sink: ((ArraySlice<UInt8>) -> Void)? = nil) -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0, let sink {
                sink(buffer[..<n])
            } else if n > 0 {
                all.append(contentsOf: buffer[..<n])
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return all
            }
        }
    }

    /// The child's status once it has ended (see ``Finished/status``).
    static func waitForExit(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
