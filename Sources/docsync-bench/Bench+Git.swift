import DocsyncModel
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
        results.gitCommits = try commitCount(in: dir, work: work) - 1
        (results.gitTrickleCPUms, results.gitTrickleGitCPUms) = try await measureGitTrickle(url: url, folder: dir, agent: agent, work: work)
        await agent.stop()
        results.gitFloorMs = try Self.gitFloor(dir, commits: 10, work: work) * 1000
        log("pull with --git-commit: \(docs) in \(fmt(results.gitPullSeconds)) s, \(results.gitCommits) commits")
    }

    /// A steady trickle into the repository of 4c: one document changed on the server a second,
    /// each pulled and committed on its own. The CPU of the agent with its git children, and of
    /// the children alone, in ms a commit.
    func measureGitTrickle(url: String, folder: String, agent: DocsyncProcess, work: TempFolder) async throws -> (all: Double, git: Double) {
        let commitsBefore = try commitCount(in: folder, work: work)
        let (cpu, git) = try await trickle(url: url, work: work, agent: agent, firstEdit: 1_000) {
            try await self.waitForCommits(in: folder, process: agent)
        }
        let commits = max(1, try commitCount(in: folder, work: work) - commitsBefore)
        log("git trickle: \(trickleChanges) changes, \(commits) commits, \(fmt(cpu * 1000 / Double(commits), 0)) ms CPU a commit (git \(fmt(git * 1000 / Double(commits), 0)))")
        return (cpu * 1000 / Double(commits), git * 1000 / Double(commits))
    }

    /// The same trickle into 4b's last folder, pulled by an agent without git history: what the
    /// pulls cost alone, the baseline of 4c's trickle. CPU ms a change.
    func measurePlainTrickle(url: String, folder: String, agent: DocsyncProcess, work: TempFolder) async throws -> Double {
        let last = trickleChanges - 1
        let (cpu, _) = try await trickle(url: url, work: work, agent: agent, firstEdit: 2_000) {
            while Self.edit(of: folder + "/bench/d\(last).json") != 2_000 + last {
                guard agent.isRunning else { throw ProcessFailure("agent exited: \(agent.stderr)") }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        log("plain trickle: \(trickleChanges) changes, \(fmt(cpu * 1000 / Double(trickleChanges), 0)) ms CPU a change")
        return cpu * 1000 / Double(trickleChanges)
    }

    var trickleChanges: Int { quick ? 3 : 10 }

    /// The `edit` member of the document in `file` (as the agent writes it, pretty-printed).
    static func edit(of file: String) -> Int? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8), case .number(let edit)? = (try? JSONParser.parse(text))?.object?["edit"] else { return nil }
        return Int(edit)
    }

    /// Changes documents d0, d1, … on the server, one a second, each with its `edit` from
    /// `firstEdit`, then waits for `settled`: the CPU seconds `agent` and its children spent
    /// from two seconds before the first, and its children's alone.
    private func trickle(
        url: String, work: TempFolder, agent: DocsyncProcess, firstEdit: Int, settled: () async throws -> Void
    ) async throws -> (all: Double, children: Double) {
        let api = APIClient(baseURL: url, token: try token(work: work))
        try await Task.sleep(for: .seconds(2))
        let before = ProcessStats.read(pid: agent.pid)!
        for n in 0..<trickleChanges {
            let reply = try await api.request("PUT", "/api/document", body: document(n, prefix: "d", type: "bench", edit: firstEdit + n))
            guard reply.status == 200 else { throw ProcessFailure("trickle PUT: \(reply.status)") }
            try await Task.sleep(for: .seconds(1))
        }
        try await settled()
        let after = ProcessStats.read(pid: agent.pid)!
        let all = (after.cpuSeconds + after.childCPUSeconds) - (before.cpuSeconds + before.childCPUSeconds)
        return (all, after.childCPUSeconds - before.childCPUSeconds)
    }

    func commitCount(in folder: String, work: TempFolder) throws -> Int {
        let count = try ChildRun.run("/usr/bin/git", ["-C", folder, "rev-list", "--count", "HEAD"], log: work.file("git-count.log"))
        return Int(count.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
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
