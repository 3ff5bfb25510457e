@testable import DocsyncAgent
import DocsyncGit
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

extension HeavySuites {
/// Pulled changes in git: real repositories, a real server with named tokens, real agents.
@Suite(.serialized) struct GitHistoryTests {
    final class Rig: Sendable {
        let server: TestServer
        let tokens: TempFolder
        let a: TempFolder
        let repo: TempFolder
        let agentA: TestAgent
        let agentB: TestAgent

        init(target: GitHistoryWriter.Target) async throws {
            tokens = try TempFolder("git-tokens")
            try tokens.write("tokens", "alice tok-alice\nbob tok-bob\ncarol tok-carol\n")
            server = try await TestServer.start(configure: { [tokens] in $0.tokenFile = tokens.file("tokens") })
            a = try TempFolder("git-a")
            repo = try TempFolder("git-b")
            try git(["init", "-q", "-b", "main"], in: repo.path)
            try repo.write("README", "mine\n")
            try repo.write(".gitignore", ".docsync/\n")
            try git(["add", "README", ".gitignore"], in: repo.path)
            try git(["commit", "-qm", "start"], in: repo.path)
            agentA = try await TestAgent.start(folder: a, endpoint: server.url, token: "tok-alice")
            agentB = try await TestAgent.start(folder: repo, endpoint: server.url, token: "tok-bob") {
                $0.git = GitHistoryOptions(target: target, authors: ["alice": "Alice Liddell <alice@example.org>"])
            }
        }

        /// `%an|%at|%s` of each commit on `ref`, newest first.
        func log(_ ref: String = "HEAD", _ paths: [String] = []) throws -> [String] {
            try git(["log", "--format=%an|%at|%s", ref, "--"] + paths, in: repo.path).split(separator: "\n").map(String.init)
        }

        func finish() async {
            try? await agentA.stop()
            try? await agentB.stop()
            await server.stop()
            for folder in [tokens, a, repo] { folder.remove() }
        }
    }

    @Test func changesFromOthersArriveInHistoryWithTheirAuthorAndTheServersTime() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        try rig.a.write("note/x.json", #"{"id":"x","title":"first"}"#)
        #expect(await eventually { (try? rig.log().first)?.contains("note/x: new") == true }, "\((try? rig.log()) ?? [])")
        let first = try #require(try rig.log().first).split(separator: "|")
        #expect(first[0] == "Alice Liddell", "the author map names alice")
        let stored = try #require(try await APIClient(baseURL: rig.server.url, token: "tok-alice").documents(type: "note")["x"])
        let serverTime = try #require(stored["updated_at"]?.string.flatMap { Timestamp(rfc3339: $0) }).unixMilliseconds / 1000
        #expect(Int64(first[1]) == serverTime, "the author date is the server's time of the change")
        // Another writer, by the API: its token's name, unmapped.
        #expect(try await rig.server.api.request("PUT", "/api/document", body: #"{"id":"y","docType":"note","n":1}"#, token: "tok-carol").status == 200)
        #expect(await eventually { (try? rig.log().first)?.hasPrefix("carol|") == true })
        // An edit, a move to another docType's folder, a deletion.
        try rig.a.write("note/x.json", #"{"id":"x","title":"second"}"#)
        #expect(await eventually { (try? rig.log().first)?.contains("note/x: title") == true })
        // Moved to another docType's folder there: here the file stays where it is, its docType said.
        try rig.a.move("note/x.json", "task/x.json")
        #expect(await eventually { (try? rig.log().first)?.contains("task/x: docType") == true }, "\((try? rig.log()) ?? [])")
        // A pulled change never moves a file here, so a document's whole history is one path.
        let followed = try git(["log", "--follow", "--format=%s", "--", "note/x.json"], in: rig.repo.path)
        #expect(followed.split(separator: "\n") == ["task/x: docType", "note/x: title", "note/x: new"], "\(followed)")
        try rig.a.remove("note/y.json")
        #expect(await eventually { (try? git(["ls-files", "note/y.json"], in: rig.repo.path))?.isEmpty == true }, "the deletion is committed")
        #expect(try git(["status", "--porcelain"], in: rig.repo.path).isEmpty, "nothing left uncommitted, nothing staged")
        #expect(try rig.log().allSatisfy { !$0.hasPrefix("bob|") }, "nothing is committed as this folder's own token")
    }

    /// After committing, docsync runs git's automatic maintenance as `git commit` would, under
    /// the repository's own settings: here a task that packs loose objects once there is one,
    /// so the commit's loose objects go into a pack (with git's defaults, `gc --auto` does so
    /// at about 6,700).
    @Test func gitsOwnMaintenanceRunsAfterDocsyncCommits() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        for (key, value) in GitPacking.onFirstLooseObject { try git(["config", key, value], in: rig.repo.path) }
        let before = GitPacking.packs(in: rig.repo.path)
        try rig.a.write("note/m.json", #"{"id":"m","title":"packed"}"#)
        #expect(await eventually { (try? rig.log().first)?.contains("note/m: new") == true }, "\((try? rig.log()) ?? [])")
        #expect(await eventually { GitPacking.packs(in: rig.repo.path) > before }, "git's maintenance packed the loose objects")
        try git(["fsck", "--no-progress"], in: rig.repo.path)  // fails the test on anything git finds wrong
        #expect(try git(["cat-file", "-p", "HEAD:note/m.json"], in: rig.repo.path).contains("packed"))
    }

    @Test func aRebaseInProgressHoldsCommitsAndAnEditMadeMeanwhileStaysTheUsers() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        try rig.a.write("note/x.json", #"{"id":"x","title":"first"}"#)
        #expect(await eventually { (try? rig.log().first)?.contains("note/x") == true })
        let commits = try rig.log().count
        let gitDir = rig.repo.file(".git")
        try FileManager.default.createDirectory(atPath: gitDir + "/rebase-merge", withIntermediateDirectories: true)
        try rig.a.write("note/x.json", #"{"id":"x","title":"second"}"#)
        try rig.a.write("note/z.json", #"{"id":"z","title":"new"}"#)
        #expect(await eventually { (try? rig.repo.read("note/z.json")) != nil && (try? rig.repo.read("note/x.json"))?.contains("second") == true })
        #expect(await eventually { (try? await AgentStatus.read(root: rig.repo.path))?.text(now: 0).contains("rebase") == true })
        #expect(try rig.log().count == commits, "no commit during the rebase")
        // The user edits x meanwhile: that file is theirs to commit.
        try rig.repo.write("note/x.json", "{\n  \"id\": \"x\",\n  \"title\": \"mine\"\n}\n")
        try FileManager.default.removeItem(atPath: gitDir + "/rebase-merge")
        #expect(await eventually { (try? rig.log().first)?.contains("note/z: new") == true }, "made once the rebase is over: \(rig.agentB.logs.all.suffix(8))")
        #expect(try git(["show", "HEAD:note/x.json"], in: rig.repo.path).contains("first"), "the user's edit is not committed")
        #expect(try git(["status", "--porcelain"], in: rig.repo.path) == " M note/x.json\n", "unstaged, as the user left it")
    }

    /// The user's own git commands run throughout (a file of their own added and committed, over
    /// and over): none finds a lock of docsync's unless they leave docsync no gap for long, and
    /// every pulled change is committed by docsync while they run.
    @Test func theUsersOwnGitCommandsRunningThroughoutMeetALockOnlyWhenTheyLeaveNoGap() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        let repo = rig.repo.path
        let done = Mutex(false)
        let finished = Mutex(0)
        let user = Task.detached { () -> (failures: [String], rounds: Int) in
            var failures: [String] = []
            var rounds = 0
            while !done.withLock({ $0 }) {
                do {
                    try rig.repo.write("mine.txt", "edit \(rounds)\n")
                    try git(["status", "--porcelain"], in: repo)
                    try git(["add", "mine.txt"], in: repo)
                    try git(["commit", "-q", "--allow-empty", "-m", "user \(rounds)"], in: repo)
                } catch {
                    failures.append("\(error)")
                }
                rounds += 1
                finished.withLock { $0 = rounds }
                try? await Task.sleep(for: .milliseconds(Int.random(in: 20...120)))  // a busy script's pace, not a synchronisation
            }
            return (failures, rounds)
        }
        // DOCSYNC_GIT_STRESS_WRITES=5000 runs it long, to measure the rate of meetings (docs/GIT.md).
        // At least 50 writes and three seconds of them: a commit held back by the user's git
        // commands is tried again a second later, and on a loaded machine fifty writes can be
        // over before that (docsync then commits only after the user's loop, and the test says
        // nothing of the interleaving it is about).
        let least = max(50, Int(ProcessInfo.processInfo.environment["DOCSYNC_GIT_STRESS_WRITES"] ?? "") ?? 50)
        let began = ContinuousClock.now
        var writes = 0
        while writes < least || ContinuousClock.now - began < .seconds(3) || writes % 10 != 0 {
            try rig.a.write("note/n\(writes % 10).json", #"{"id":"n\#(writes % 10)","v":\#(writes)}"#)
            writes += 1
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...40)))  // a user's pace, not a synchronisation
        }
        let complete = await eventually(timeout: .seconds(30)) {
            (0..<10).allSatisfy { n in (try? git(["show", "HEAD:note/n\(n).json"], in: repo))?.contains("\"v\": \(writes - 10 + n)") == true }
        }
        // Two more rounds of the user's after docsync's last commit: on a loaded machine that
        // commit can be the one the check above waited for.
        let seen = finished.withLock { $0 }
        _ = await eventually(timeout: .seconds(30)) { finished.withLock { $0 } >= seen + 2 }
        done.withLock { $0 = true }
        let (failures, rounds) = await user.value
        #expect(complete, "every last version is in HEAD; docsync said: \(rig.agentB.logs.warnings)")
        // Known gap: docsync takes git's locks only while /proc shows no git command in the tree,
        // and holds them for a few system calls; a command started during that look can still
        // meet them, rarely (docs/GIT.md), and more often when the machine pauses docsync's
        // thread inside the window: a CI run with its checks beside the suite saw 2 in 48
        // rounds. Up to three meetings in a run are that gap; more is a regression (locks held
        // across a process or an fsync fail dozens of rounds).
        // On a loaded machine the user's loop can leave docsync no gap at all; after a while
        // (GitCommitter.patience) it commits under git's locks, held for the commit's few
        // processes, which the user's commands started meanwhile meet: that trade is said in the
        // log. The locks are held for eight git processes, a user's round is three (and a pause):
        // a hold spans at most about three rounds. Measured on two cores under four busy loops, 6
        // meetings over 3 such commits; in the full suite, 2 and 3 over 1.
        let insisted = rig.agentB.logs.count(containing: "committing under git's locks")
        print("git lock meetings: \(failures.count) of \(rounds) rounds, \(insisted) commits under the locks \(failures)")
        #expect(failures.count <= 3 + 4 * insisted, "\(failures.count) of \(rounds) rounds failed: \(failures.prefix(3))")
        // docsync committed among the user's commands, not only before or after them: one of its
        // commits has the user's on both sides. (How many it makes depends on the machine's load:
        // the busier, the more changes each commit gathers.)
        let byDocsync = try rig.log().compactMap { line -> Bool? in
            line.hasPrefix("Alice Liddell|") ? true : line.split(separator: "|").last?.hasPrefix("user ") == true ? false : nil
        }
        let among = byDocsync.indices.contains { i in byDocsync[i] && byDocsync[..<i].contains(false) && byDocsync[(i + 1)...].contains(false) }
        #expect(among, "docsync's commits among the user's (newest first): \(byDocsync), \(rounds) rounds")
        // Nothing of docsync's left staged or unstaged (the user's own file is theirs: a round of
        // theirs that met the lock left it modified).
        #expect(await eventually {
            (try? git(["status", "--porcelain"], in: repo))?.split(separator: "\n").allSatisfy { $0.hasSuffix(" mine.txt") } == true
        }, "\((try? git(["status"], in: repo)) ?? "")")
    }

    /// A git command of the user's that runs for long (a `git log` left open in its pager; here
    /// `git cat-file --batch` waiting for its input) holds commits back only for a while: they
    /// are then made under git's locks, which such a command does not take.
    @Test func aLongRunningGitCommandOfTheUsersHoldsCommitsBackOnlyForAWhile() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        reader.arguments = ["git", "cat-file", "--batch"]
        reader.currentDirectoryURL = URL(fileURLWithPath: rig.repo.path)
        let input = Pipe()
        reader.standardInput = input
        reader.standardOutput = FileHandle.nullDevice
        try reader.run()
        defer {
            try? input.fileHandleForWriting.close()
            reader.waitUntilExit()
        }
        try rig.a.write("note/x.json", #"{"id":"x","title":"first"}"#)
        #expect(await eventually { (try? rig.repo.read("note/x.json")) != nil })
        #expect(await eventually { (try? await AgentStatus.read(root: rig.repo.path))?.text(now: 0).contains("git command") == true }, "held back while it runs")
        #expect(await eventually(timeout: .seconds(30)) { (try? rig.log().first)?.contains("note/x: new") == true }, "\(rig.agentB.logs.all.suffix(6))")
        #expect(reader.isRunning, "the user's command is left alone")
        #expect(rig.agentB.logs.count(containing: "committing under git's locks") >= 1, "said in the log")
        #expect(try git(["status", "--porcelain"], in: rig.repo.path).isEmpty, "the user's index follows the commit")
    }

    /// Trust finding (fourth round, 4): a user's `git add -A; git commit` loop beside
    /// `--git-commit` failed 200 times on docsync's temporaries ("unable to stat …tmp") and
    /// committed 84 of them. Every temporary is now made under `.docsync/`, which excludes itself
    /// from git (its own `.gitignore`; this repository has no rule for it).
    @Test func theUsersAddAllLoopNeverSeesATemporaryOfDocsyncs() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        let repo = rig.repo.path
        try git(["rm", "-q", ".gitignore"], in: repo)
        try git(["commit", "-qm", "no rule for .docsync"], in: repo)
        let done = Mutex(false)
        let user = Task.detached { () -> (failures: [String], rounds: Int) in
            var (failures, rounds) = ([String](), 0)
            while !done.withLock({ $0 }) {
                do {
                    try rig.repo.write("mine.txt", "edit \(rounds)\n")
                    try git(["add", "-A"], in: repo)
                    try git(["commit", "-q", "--allow-empty", "-m", "user \(rounds)"], in: repo)
                } catch {
                    failures.append("\(error)")
                }
                rounds += 1
            }
            return (failures, rounds)
        }
        for i in 0..<60 {
            try rig.a.write("note/n\(i % 10).json", #"{"id":"n\#(i % 10)","v":\#(i)}"#)
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...30)))  // a user's pace, not a synchronisation
        }
        let complete = await eventually(timeout: .seconds(30)) {
            (0..<10).allSatisfy { n in (try? String(contentsOfFile: rig.repo.file("note/n\(n).json"), encoding: .utf8))?.contains("\"v\": \(50 + n)") == true }
        }
        done.withLock { $0 = true }
        let (failures, rounds) = await user.value
        #expect(complete)
        let lockMeetings = failures.filter { $0.contains(".lock") }
        #expect(failures.count - lockMeetings.count == 0, "\(failures.prefix(3)) in \(rounds) rounds")
        let committed = try git(["log", "--all", "--name-only", "--format="], in: repo).split(separator: "\n")
        #expect(!committed.contains { $0.contains(".docsync") || $0.hasSuffix(".tmp") }, "\(committed.filter { $0.contains(".docsync") || $0.hasSuffix(".tmp") }.prefix(5))")
    }

    /// The one-shot `sync` commits what it pulled before it returns.
    @Test func aOneShotSyncCommitsWhatItPulled() async throws {
        let rig = try await Rig(target: .checkedOut)
        defer { Task { await rig.finish() } }
        try await rig.agentB.stop()
        try rig.a.write("note/s.json", #"{"id":"s","title":"pulled by sync"}"#)
        #expect(await eventually { (try? await APIClient(baseURL: rig.server.url, token: "tok-alice").documents(type: "note")["s"]) != nil })
        try rig.tokens.write("bob.token", "tok-bob\n")
        let (status, _, err) = try await runDocsync(
            ["sync", rig.repo.path, "--endpoint", rig.server.url, "--token-file", rig.tokens.file("bob.token"), "--git-commit"],
            logDirectory: rig.tokens.path)
        #expect(status == 0, "\(err.suffix(1500))")
        let newest = try rig.log().first ?? ""
        #expect(newest.hasPrefix("alice|") && newest.contains("note/s: new"), "without --authors, the token's name: \(newest)")
    }

    /// Trust finding (fourth round, 5): `--git-branch main` while `main` was checked out moved the
    /// branch under the user's index, and their next commit deleted the pulled files. The
    /// checked-out branch is never moved: commits are held and `status` says why.
    @Test func theCheckedOutBranchIsNeverTheBranchOfItsOwn() async throws {
        let rig = try await Rig(target: .branch("main"))
        defer { Task { await rig.finish() } }
        let head = try git(["rev-parse", "HEAD"], in: rig.repo.path)
        try rig.a.write("note/x.json", #"{"id":"x","title":"first"}"#)
        #expect(await eventually { rig.repo.exists("note/x.json") })
        #expect(await eventually { (try? await AgentStatus.read(root: rig.repo.path))?.text(now: 0).contains("main is the checked-out branch") == true })
        #expect(try git(["rev-parse", "HEAD"], in: rig.repo.path) == head, "main did not move")
    }

    /// Branch names as `git check-ref-format --branch` takes them, and none that makes a ref
    /// nobody meant (`refs/heads/HEAD`, `refs/heads/refs/heads/main`).
    @Test func aBranchNameGitWouldRefuseOrThatNamesARefIsRefused() async throws {
        let work = try TempFolder("branch-names")
        defer { work.remove() }
        for (name, why) in [("HEAD", "names HEAD"), ("refs/heads/main", "give the branch's name alone (main)"), ("a..b", "check-ref-format"),
                            (".hidden", "check-ref-format"), ("x.lock", "check-ref-format"), ("a//b", "check-ref-format"), ("end.", "check-ref-format")] {
            let (code, _, err) = try await runDocsync(
                ["sync", work.path, "--endpoint", "http://127.0.0.1:9", "--git-branch", name], environment: ["DOCSYNC_TOKEN": "t"], logDirectory: work.path)
            #expect(code != 0 && err.contains("--git-branch: \"\(name)\"") && err.contains(why), "\(name): \(err)")
        }
    }

    @Test func aBranchOfItsOwnLeavesHeadTheIndexAndTheWorkTreesStatusAlone() async throws {
        let rig = try await Rig(target: .branch("docsync/pulled"))
        defer { Task { await rig.finish() } }
        let head = try git(["rev-parse", "HEAD"], in: rig.repo.path)
        let index = try Data(contentsOf: URL(fileURLWithPath: rig.repo.file(".git/index")))
        try rig.a.write("note/x.json", #"{"id":"x","title":"first"}"#)
        try rig.a.write("note/w.json", #"{"id":"w","title":"other"}"#)
        #expect(await eventually { ((try? rig.log("docsync/pulled", ["note"])) ?? []).count >= 1 && (try? rig.log("docsync/pulled", ["note/w.json"]))?.isEmpty == false })
        #expect(try git(["show", "docsync/pulled:note/x.json"], in: rig.repo.path).contains("first"))
        #expect(try git(["rev-parse", "HEAD"], in: rig.repo.path) == head, "HEAD is where it was")
        #expect(try Data(contentsOf: URL(fileURLWithPath: rig.repo.file(".git/index"))) == index, "the index is byte for byte as it was")
        #expect(try git(["status", "--porcelain"], in: rig.repo.path) == "?? note/\n", "the synced files, untracked, as without git mode")
        #expect(try git(["symbolic-ref", "HEAD"], in: rig.repo.path) == "refs/heads/main\n")
    }
}
}
