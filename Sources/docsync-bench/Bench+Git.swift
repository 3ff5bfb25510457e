import DocsyncTestSupport
import Foundation
import GRDB

extension Bench {
    /// 4c. The pull of 4b again, into an empty folder in a git work tree with `--git-commit`:
    /// until every document is in the folder and every pulled change is committed, beside 4b's
    /// pull alone; and how many commits that made (one per author and pull batch).
    func measureGitPull(url: String, work: TempFolder, results: inout Results) async throws {
        log("pull into a git work tree with --git-commit")
        let dir = work.file("pulled-git")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try ".docsync/\n".write(toFile: dir + "/.gitignore", atomically: true, encoding: .utf8)
        for arguments in [["init", "-q", "-b", "main"], ["add", ".gitignore"], ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "start"]] {
            let run = try ChildRun.run("/usr/bin/git", ["-C", dir] + arguments, log: work.file("git.log"))
            guard run.exitStatus == 0 else { throw ProcessFailure("git \(arguments) failed: \(run.output)") }
        }
        let start = now()
        let agent = try DocsyncProcess(
            ["watch", dir, "--endpoint", url, "--token-file", work.file("token"), "--git-commit"], logDirectory: work.path, name: "watch-git")
        try await waitForRecordedFiles(in: dir, atLeast: docs, process: agent)
        try await waitForCommits(in: dir, process: agent)
        results.gitPullSeconds = seconds(since: start)
        await agent.stop()
        let count = try ChildRun.run("/usr/bin/git", ["-C", dir, "rev-list", "--count", "HEAD"], log: work.file("git-count.log"))
        results.gitCommits = (Int(count.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1) - 1
        log("pull with --git-commit: \(docs) in \(fmt(results.gitPullSeconds)) s, \(results.gitCommits) commits")
    }

    /// Until the agent's index holds no pulled change waiting for its commit, and one was made.
    func waitForCommits(in folder: String, process: DocsyncProcess) async throws {
        let db = try readOnly(folder + "/.docsync/index.sqlite")
        while true {
            let done = try? await db.read { db -> Bool in
                let waiting = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM git_change") ?? 1
                let made = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'git_last_commit'") != nil
                return waiting == 0 && made
            }
            if done == true { return }
            guard process.isRunning else { throw ProcessFailure("agent exited: \(process.stderr)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
