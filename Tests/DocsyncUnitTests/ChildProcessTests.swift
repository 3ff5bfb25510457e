@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// How the agent runs git: a git that stops reading its input does not take the agent with it,
/// and a git it starts can be stopped by SIGTERM and SIGINT whatever the agent's threads block.
@Suite struct ChildProcessTests {
    /// A git that exits before reading its input (as `fast-import` does when the disk is full)
    /// left the agent writing into a pipe nobody read: SIGPIPE ended the agent (and would end
    /// this test run). Now the command fails with git's own message.
    @Test func aGitThatExitsBeforeReadingItsInputFailsWithItsMessage() async throws {
        let folder = try TempFolder("child")
        defer { folder.remove() }
        let git = try GitRunner.find(in: folder.path)
        _ = try await git.check(["init", "-q"])
        let input = [UInt8](repeating: UInt8(ascii: "x"), count: 4 << 20)  // far more than a pipe holds
        let out = try await git.run(["hash-object", "-w", "--stdin", "--no-such-option"], input: input)
        #expect(out.status == 129)
        #expect(out.stderr.contains("unknown option"))
        // And a command that reads it all still gets every byte.
        let hashed = try await git.check(["hash-object", "--stdin"], input: input)
        #expect(hashed.text.count == 40)
    }

    /// The agent's threads block SIGTERM and SIGINT (libdispatch's signal sources take them that
    /// way); a child inheriting that mask could not be stopped by `systemctl stop`. A child
    /// started from such a thread has nothing blocked.
    @Test func aChildStartedFromAThreadBlockingSIGTERMHasNothingBlocked() async throws {
        let grep = try #require(["/usr/bin/grep", "/bin/grep"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let status: String = await withCheckedContinuation { done in
            Thread {
                var blocked = sigset_t()
                sigemptyset(&blocked)
                sigaddset(&blocked, SIGTERM)
                sigaddset(&blocked, SIGINT)
                pthread_sigmask(SIG_BLOCK, &blocked, nil)
                // grep itself, not through a shell: dash clears its mask as it starts.
                let run = try? ChildProcess.run(grep, ["^SigBlk", "/proc/self/status"], environment: [:], input: nil)
                done.resume(returning: run.map { String(decoding: $0.stdout, as: UTF8.self) } ?? "could not run")
            }.start()
        }
        #expect(status.trimmingCharacters(in: .whitespacesAndNewlines) == "SigBlk:\t0000000000000000")
    }
}
