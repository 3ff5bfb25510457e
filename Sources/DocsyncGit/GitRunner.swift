import Foundation

/// Why a git step did not happen: said to the user as it is (`status`, the log).
public struct GitError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What a git command printed.
struct GitOutput: Sendable {
    var status: Int32
    var stdout: [UInt8]
    var stderr: String
    var text: String { String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Runs the `git` found on `PATH` (plumbing only, never a porcelain that might prompt or open an
/// editor), off the caller's thread: a command blocks on its pipes.
struct GitRunner: Sendable {
    let executable: String
    /// Where commands run (`git -C`).
    let directory: String

    /// The runner for `directory`; fails when git is not installed.
    static func find(in directory: String) throws(GitError) -> GitRunner {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where access("\(folder)/git", X_OK) == 0 {
            return GitRunner(executable: "\(folder)/git", directory: directory)
        }
        throw GitError("git is not installed (not found on PATH); install it (apt-get install git) for --git-commit and --git-branch")
    }

    /// Runs git with `arguments`; `output`, when given, is handed its output as it comes (a long
    /// listing filtered as it is read, never held whole).
    func run(
        _ arguments: [String], input: [UInt8]? = nil, extra: [String: String] = [:], output: (@Sendable (ArraySlice<UInt8>) -> Void)? = nil
    ) async throws(GitError) -> GitOutput {
        try await offThread { () throws(GitError) -> GitOutput in try runHere(arguments, input: input, extra: extra, output: output) }
    }

    @discardableResult
    /// As ``run(_:input:extra:output:)``, failing with git's own message when the command fails.
    func check(
        _ arguments: [String], input: [UInt8]? = nil, extra: [String: String] = [:], output: (@Sendable (ArraySlice<UInt8>) -> Void)? = nil
    ) async throws(GitError) -> GitOutput {
        try Self.checked(try await run(arguments, input: input, extra: extra, output: output), arguments)
    }

    /// As ``check(_:input:extra:output:)``, on the caller's thread: for work already moved off
    /// the caller's (``offThread(_:)``).
    @discardableResult
    func checkHere(_ arguments: [String], input: [UInt8]? = nil, extra: [String: String] = [:]) throws(GitError) -> GitOutput {
        try Self.checked(try runHere(arguments, input: input, extra: extra, output: nil), arguments)
    }

    /// Git started with `arguments` and talked to as it runs (see ``ChildSession``).
    func session(_ arguments: [String]) throws(GitError) -> ChildSession {
        try ChildSession(executable, ["-C", directory] + arguments, environment: environment(extra: [:]))
    }

    /// `work`, which runs git and waits for it, on a thread of its own rather than the caller's.
    func offThread<T: Sendable>(_ work: @escaping @Sendable () throws(GitError) -> T) async throws(GitError) -> T {
        let result: Result<T, GitError> = await withCheckedContinuation { done in
            DispatchQueue.global().async {
                do throws(GitError) {
                    done.resume(returning: .success(try work()))
                } catch {
                    done.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Runs git on the caller's thread, waiting for it to end.
    private func runHere(
        _ arguments: [String], input: [UInt8]?, extra: [String: String], output: (@Sendable (ArraySlice<UInt8>) -> Void)?
    ) throws(GitError) -> GitOutput {
        let done = try ChildProcess.run(executable, ["-C", directory] + arguments, environment: environment(extra: extra), input: input, output: output)
        return GitOutput(status: done.status, stdout: done.stdout, stderr: String(decoding: done.stderr, as: UTF8.self))
    }

    /// `out`, or git's own message when the command failed.
    private static func checked(_ out: GitOutput, _ arguments: [String]) throws(GitError) -> GitOutput {
        guard out.status == 0 else {
            throw GitError("git \(arguments.first ?? "") failed: \(out.stderr.trimmingCharacters(in: .whitespacesAndNewlines).prefix(500))")
        }
        return out
    }

    /// The agent's environment as git is given it: none of the variables a user's shell may point
    /// git elsewhere with (docsync says where, every time), no prompt, and `extra`.
    private func environment(extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE"] { env[key] = nil }
        env["GIT_TERMINAL_PROMPT"] = "0"
        // The reflog of a ref docsync moves names docsync, whether or not the user set an identity.
        env["GIT_COMMITTER_NAME"] = "docsync"
        env["GIT_COMMITTER_EMAIL"] = "docsync@localhost"
        env["LC_ALL"] = "C"
        env["GLIBC_TUNABLES"] = Self.tunables(env["GLIBC_TUNABLES"])
        env.merge(extra) { _, new in new }
        return env
    }

    /// The user's glibc tunables, with a malloc trim threshold of 64 MiB unless they set one.
    /// glibc gives freed heap back to the kernel once its top passes the threshold, which it
    /// sets itself from the largest block freed: `fast-import` frees its compressor's state
    /// after each blob, so 100,000 blobs made 210,000 `brk` calls, 2.5 s of system time in a
    /// run of 3.7 s. Kept for the next blob, the run takes 1.1 s. Ignored where there is no glibc.
    static func tunables(_ user: String?) -> String {
        let ours = "glibc.malloc.trim_threshold=67108864"
        guard let user, !user.isEmpty else { return ours }
        if user.split(separator: ":").contains(where: { $0.hasPrefix("glibc.malloc.trim_threshold=") }) { return user }
        return user + ":" + ours
    }
}
