import DocsyncGit
import DocsyncTestSupport
import Foundation

/// What one pulled change's commit costs in a folder of each size, made by the agent's own
/// commit code in this process (`--git-tree 10000,100000,1000000`): the memory the commits and
/// the packing of their trees add to the process at their peak (which must not grow with the folder: a tree of 100,000 entries
/// is 4.7 MB, of a million 47 MB), the CPU a commit (this process and its git children) onto a
/// branch of its own and onto the checked-out branch with the user's index following, beside
/// git's floor for the same change in the same run (the file added to a copy of the folder's
/// index and the tree written from it, as `git add` and `git commit` do); and the CPU a tree costs
/// to pack, by the agent (`GitHistoryWriter.maintain`: each a delta on the next) beside git's
/// `pack-objects` (as `gc --auto` packs them: a window of 10, chains of up to 50) of the same trees.
struct GitTreeRun {
    var files = 0
    var commits = 0
    /// The process's resident memory before the commits, and its peak while they were made.
    var residentBefore = 0
    var residentPeak = 0
    var cpuPerCommit = 0.0
    /// The same commits on the checked-out branch, the user's index following (`--git-commit`).
    var cpuPerCommitFollowed = 0.0
    /// Commits of one file removed each, the user's index following.
    var cpuPerDeletionFollowed = 0.0
    var floorPerCommit = 0.0
    /// CPU to pack a commit's trees (the folder's and the root's): by the agent, and by git's
    /// `pack-objects` for the same trees.
    var packPerCommit = 0.0
    var gitPackPerCommit = 0.0

    static func table(_ runs: [GitTreeRun]) -> String {
        var lines = [
            "## git commits of one change into one folder of each size (the agent's commit code, in process)", "",
            "| files in the folder | its tree | memory the commits add at their peak | CPU a commit (with git) | the same, the user's index following | a deletion, the index following | git's floor: update-index + write-tree | × the floor | packing a commit's trees: agent / git's pack-objects |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for run in runs {
            let tree = Double(run.files) * 47 / 1_048_576
            lines.append(
                "| \(run.files) | \(fmt(tree, 1)) MiB | \(fmt(Double(run.residentPeak - run.residentBefore) / 1_048_576, 1)) MiB | \(fmt(run.cpuPerCommit * 1000, 1)) ms | \(fmt(run.cpuPerCommitFollowed * 1000, 1)) ms | \(fmt(run.cpuPerDeletionFollowed * 1000, 1)) ms | \(fmt(run.floorPerCommit * 1000, 1)) ms | \(fmt(run.cpuPerCommitFollowed / run.floorPerCommit, 2))× | \(fmt(run.packPerCommit * 1000, 1)) / \(fmt(run.gitPackPerCommit * 1000, 1)) ms |")
        }
        return lines.joined(separator: "\n")
    }
}

extension Bench {
    func measureGitTree(sizes: [Int], work: TempFolder) async throws -> [GitTreeRun] {
        var runs: [GitTreeRun] = []
        for size in sizes {
            let repo = work.file("git-tree-\(size)")
            let start = try Self.repository(repo, files: size, work: work)
            var run = GitTreeRun(files: size, commits: 10)
            let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo), target: .branch("trickle"))
            _ = try ChildRun.run("/usr/bin/git", ["-C", repo, "update-ref", "refs/heads/trickle", start], log: work.file("git-tree.log"))
            // The peak is measured from here: the kernel's high-water mark of this process reset.
            try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            run.residentBefore = Self.residentBytes(pid: getpid())
            run.cpuPerCommit = try await Self.commits(run.commits, by: writer, into: size)
            // The same on the checked-out branch: the user's index (as `update-index` left it, with
            // its cache tree) follows each commit.
            _ = try ChildRun.run("/usr/bin/git", ["-C", repo, "update-ref", "refs/heads/main", start], log: work.file("git-tree.log"))
            let followed = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo), target: .checkedOut)
            run.cpuPerCommitFollowed = try await Self.commits(run.commits, by: followed, into: size)
            run.cpuPerDeletionFollowed = try await Self.commits(run.commits, by: followed, into: size, removing: true)
            run.floorPerCommit = try Self.gitFloor(repo, commits: run.commits, work: work)
            (run.packPerCommit, run.gitPackPerCommit) = try await Self.packing(repo, by: followed, commits: run.commits, work: work)
            // The peak with the packing of the commits' trees in it (git's own runs in its processes).
            run.residentPeak = ProcessStats.read(pid: getpid())?.peakRSSBytes ?? 0
            log("git tree of \(size): \(fmt(run.cpuPerCommit * 1000, 1)) ms a commit, \(fmt(run.cpuPerCommitFollowed * 1000, 1)) with the index, a deletion \(fmt(run.cpuPerDeletionFollowed * 1000, 1)), floor \(fmt(run.floorPerCommit * 1000, 1)) ms, +\((run.residentPeak - run.residentBefore) >> 20) MiB, packing a commit's trees \(fmt(run.packPerCommit * 1000, 1)) ms, git \(fmt(run.gitPackPerCommit * 1000, 1)) ms")
            try? FileManager.default.removeItem(atPath: repo)
            runs.append(run)
        }
        return runs
    }

    /// The CPU (this process and its git children) of each of `count` commits of one changed file
    /// (with `removing`, one file removed: others than those changed and than the floor's) into a
    /// folder of `size` made by `writer`.
    static func commits(_ count: Int, by writer: GitHistoryWriter, into size: Int, removing: Bool = false) async throws -> Double {
        let before = ownCPUSeconds(withChildren: true)
        for n in 0..<count {
            let path = "bench/d\((n * 7919 + (removing ? size / 2 : 0)) % size).json"
            let plan = GitCommitPlan(
                author: GitIdentity(name: "bench", email: "bench@docsync"), authorTime: 1_767_225_600_000, committerTime: 1_767_225_600_000,
                message: "trickle \(n)\n", entries: [removing ? .remove(path: path) : .put(path: path, bytes: Array("{\"edit\":\(n)}\n".utf8))])
            guard case .committed = try await writer.commit([plan]) else { throw ProcessFailure("commit \(n) into \(size) files was not made") }
        }
        return (ownCPUSeconds(withChildren: true) - before) / Double(count)
    }

    /// The CPU the trees of one of the last `commits` commits on main (the folder's and the
    /// root's) cost to pack: by git's `pack-objects`
    /// (into nothing: `--stdout`), then by the agent's own packing (`writer`'s trees but each
    /// folder's newest), which removes their loose objects, less a maintenance with nothing to pack.
    static func packing(_ repo: String, by writer: GitHistoryWriter, commits: Int, work: TempFolder) async throws -> (agent: Double, git: Double) {
        let listing = try ChildRun.run("/usr/bin/git", ["-C", repo, "rev-list", "--objects", "main~\(commits)..main"], log: work.file("git-pack.log"))
        let trees = listing.output.split(separator: "\n").filter { line in
            let parts = line.split(separator: " ", omittingEmptySubsequences: false)
            return parts.count == 1 || parts.last == "bench"
        }.map { String($0.prefix { $0 != " " }) }
        let list = work.file("git-pack-list")
        try Data((trees.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: list))
        let git = try ChildRun.run("/bin/sh", ["-c", "git -C '\(repo)' pack-objects --window=10 --depth=50 --stdout < '\(list)' > /dev/null"], log: work.file("git-pack.log"))
        guard git.exitStatus == 0 else { throw ProcessFailure("git pack-objects: \(git.output)") }
        let before = ownCPUSeconds(withChildren: true)
        let round = try await writer.maintain()
        let agent = ownCPUSeconds(withChildren: true) - before
        guard round.packed > 0 else { throw ProcessFailure("the agent packed no trees") }
        // Less what maintenance costs with nothing to pack (git's own `maintenance run --auto`, which
        // runs every ten minutes, however many trees there are).
        let idleBefore = ownCPUSeconds(withChildren: true)
        guard try await writer.maintain().packed == 0 else { throw ProcessFailure("the agent packed its trees twice") }
        let idle = ownCPUSeconds(withChildren: true) - idleBefore
        let treesPerCommit = Double(trees.count) / Double(commits)
        return ((agent - idle) / Double(round.packed) * treesPerCommit, git.cpuSeconds / Double(commits))
    }

    /// A repository whose one commit holds `files` files in the folder `bench/` (all the empty blob, entries
    /// made with `update-index`): the commit.
    static func repository(_ repo: String, files: Int, work: TempFolder) throws -> String {
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        let list = work.file("git-tree-list")
        try Data((0..<files).map { "100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tbench/d\($0).json\n" }.joined().utf8).write(to: URL(fileURLWithPath: list))
        let script = """
            set -e; git init -q -b main '\(repo)'; cd '\(repo)'
            git hash-object -w --stdin < /dev/null > /dev/null
            git update-index --add --index-info < '\(list)'
            git commit-tree -m start "$(git write-tree)"
            """
        let made = try ChildRun.run("/bin/sh", ["-c", script], log: work.file("git-tree-setup.log"))
        unlink(list)
        guard made.exitStatus == 0 else { throw ProcessFailure("git repository of \(files) files: \(made.output)") }
        return String(made.output.split(separator: "\n").last ?? "")
    }

    /// The CPU a commit of one changed file costs git itself: `update-index` of one file into a
    /// copy of the folder's index, then `write-tree`, `commits` times.
    static func gitFloor(_ repo: String, commits: Int, work: TempFolder) throws -> Double {
        let script = """
            set -e; cd '\(repo)'; cp .git/index .git/floor-index; blob=$(echo floor | git hash-object -w --stdin)
            for n in $(seq 1 \(commits)); do
              GIT_INDEX_FILE=.git/floor-index git update-index --cacheinfo "100644,$blob,bench/d$n.json"
              GIT_INDEX_FILE=.git/floor-index git write-tree > /dev/null
            done
            """
        let run = try ChildRun.run("/bin/sh", ["-c", script], log: work.file("git-floor.log"))
        guard run.exitStatus == 0 else { throw ProcessFailure("git's floor: \(run.output)") }
        return run.cpuSeconds / Double(commits)  // the shell's, with the git commands it waited for
    }
}
