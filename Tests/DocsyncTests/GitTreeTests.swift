import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// A commit's tree is made from its parent's, the changed folders merged (`GitTreeWriter`), not
/// in an index: the trees must be the ones git's own index makes from the same changes, byte for
/// byte, whatever the names and the folders.
@Suite struct GitTreeTests {
    func plan(_ entries: [GitCommitPlan.Entry], _ message: String = "pulled\n") -> GitCommitPlan { .pulled(entries, message: message) }

    /// A repository whose first commit holds names that sort around each other in git's order
    /// (`a`, `a-b`, `a.json`, the folder `a/`), an executable file and a symlink.
    func repository(_ name: String, format: String = "sha1") throws -> TempFolder {
        let repo = try TempFolder(name)
        try git(["init", "-q", "-b", "main", "--object-format=\(format)"], in: repo.path)
        for path in ["a-b", "a.json", "a/x.json", "a/y/z.json", "b/c.json", "top.json", "notes/n1.json", "notes/n2.json"] {
            try repo.write(path, #"{"at":"\#(path)"}"# + "\n")
        }
        try repo.write("tool.sh", "#!/bin/sh\n")
        chmod(repo.file("tool.sh"), 0o755)
        symlink("top.json", repo.file("link"))
        try git(["add", "-A"], in: repo.path)
        try git(["commit", "-qm", "start"], in: repo.path)
        return repo
    }

    /// The tree git's index makes of `parent` with `plans` made, one after the other.
    func oracle(_ repo: TempFolder, parent: String, _ plans: [GitCommitPlan]) throws -> String {
        let index = repo.file(".git/oracle-index")
        defer { unlink(index) }
        try gitWith(["read-tree", parent], in: repo.path, env: ["GIT_INDEX_FILE": index])
        for plan in plans {
            var info = ""
            for entry in plan.entries {
                switch entry {
                case .put(let path, let bytes):
                    let blob = try gitWith(["hash-object", "-w", "--stdin"], in: repo.path, input: bytes).trimmingCharacters(in: .whitespacesAndNewlines)
                    info += "100644 \(blob)\t\(path)\0"
                case .remove(let path):
                    info += "0 \(String(repeating: "0", count: 40))\t\(path)\0"
                }
            }
            try gitWith(["update-index", "-z", "--index-info"], in: repo.path, env: ["GIT_INDEX_FILE": index], input: Array(info.utf8))
        }
        return try gitWith(["write-tree"], in: repo.path, env: ["GIT_INDEX_FILE": index]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func treesAreTheOnesGitsIndexMakesWhateverTheNamesAndFolders() async throws {
        let repo = try repository("git-tree-oracle")
        defer { repo.remove() }
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .branch("server"))
        var random = SystemRandomNumberGenerator()
        let names = ["a", "a-b", "a.json", "a0", "a/x.json", "a/new.json", "a/y/z.json", "a/y/w/v.json", "b/c.json", "b-c.json",
                     "notes/n1.json", "notes/n2.json", "notes/n3.json", "deep/er/and/deeper.json", "é.json", "top.json", "z"]
        for round in 0..<30 {
            let parent = try ((try? git(["rev-parse", "--verify", "-q", "server^{commit}"], in: repo.path)) ?? git(["rev-parse", "HEAD"], in: repo.path))
                .trimmingCharacters(in: .whitespacesAndNewlines)
            var plans: [GitCommitPlan] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let entries: [GitCommitPlan.Entry] = names.shuffled(using: &random).prefix(Int.random(in: 1...6, using: &random)).map { path in
                    Bool.random(using: &random) ? .put(path: path, bytes: Array("{\"round\":\(round),\"at\":\"\(path)\"}\n".utf8)) : .remove(path: path)
                }
                plans.append(plan(entries))
            }
            let expected = try oracle(repo, parent: parent, plans)
            // A file where the tree keeps a folder, or the other way round: refused, as git's index refuses it.
            switch try? await writer.commit(plans) {
            case .committed(let commit):
                let made = try git(["rev-parse", commit + "^{tree}"], in: repo.path).trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(made == expected, "round \(round): \(plans.map(\.entries)): \((try? git(["diff-tree", "-r", expected, made], in: repo.path)) ?? "")")
            case .nothingToCommit:
                #expect(try git(["rev-parse", parent + "^{tree}"], in: repo.path).trimmingCharacters(in: .whitespacesAndNewlines) == expected)
            default:
                Issue.record("round \(round) made no commit")
            }
        }
        let kept = try git(["ls-tree", "server", "--", "tool.sh", "link"], in: repo.path)
        #expect(kept.contains("100755 blob") && kept.contains("120000 blob"), "modes of untouched entries are kept: \(kept)")
        let fsck = try gitWith(["fsck", "--no-progress", "--strict", "--no-dangling"], in: repo.path)
        #expect(fsck.isEmpty, "\(fsck)")
    }

    /// Every commit is made on the branch as it is: what the user committed in between is kept,
    /// and the user's index follows docsync's commits. In a SHA-256 repository too.
    @Test(arguments: ["sha1", "sha256"]) func commitsFollowTheUsersOwnAndTheirIndex(format: String) async throws {
        let repo = try repository("git-tree-\(format)", format: format)
        defer { repo.remove() }
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        for (n, path) in ["notes/a.json", "notes/b.json", "c.json"].enumerated() {
            try repo.write("mine-\(n).txt", "the user's\n")
            try git(["add", "mine-\(n).txt"], in: repo.path)
            try git(["commit", "-qm", "the user's commit"], in: repo.path)
            try repo.write(path, "{}\n")
            guard case .committed = try await writer.commit([plan([.put(path: path, bytes: Array("{}\n".utf8))])]) else {
                Issue.record("no commit of \(path)")
                return
            }
        }
        let files = try git(["ls-tree", "-r", "--name-only", "HEAD"], in: repo.path).split(separator: "\n")
        #expect(["mine-0.txt", "mine-1.txt", "mine-2.txt", "notes/a.json", "notes/b.json", "c.json"].allSatisfy { files.contains(Substring($0)) }, "\(files)")
        guard case .committed = try await writer.commit([plan([.remove(path: "notes/a.json"), .remove(path: "notes/b.json")])]) else {
            Issue.record("no commit of the removals")
            return
        }
        #expect(try git(["ls-tree", "-r", "--name-only", "HEAD", "notes"], in: repo.path) == "notes/n1.json\nnotes/n2.json\n", "the folder keeps its other files")
        #expect(try git(["diff", "--cached", "--name-only"], in: repo.path).isEmpty, "the user's index followed every commit")
        #expect(try gitWith(["fsck", "--no-progress", "--strict", "--no-dangling"], in: repo.path).isEmpty)
    }

    /// The user's index is read by the agent in versions 2 to 4 and left to `ls-files` when it is
    /// split (its entries in a second file): either way it follows each commit, and what the
    /// user staged for a path is kept.
    @Test(arguments: ["4", "split"]) func theUsersIndexIsFollowedWhateverItsForm(form: String) async throws {
        let repo = try repository("git-tree-index-\(form)")
        defer { repo.remove() }
        try git(["update-index"] + (form == "split" ? ["--split-index"] : ["--index-version", form]), in: repo.path)
        try repo.write("notes/n2.json", "{\"mine\":true}\n")
        try git(["add", "notes/n2.json"], in: repo.path)
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        try repo.write("notes/n1.json", "{\"pulled\":1}\n")
        let pulled = plan([.put(path: "notes/n1.json", bytes: Array("{\"pulled\":1}\n".utf8)), .put(path: "notes/n2.json", bytes: Array("{\"pulled\":2}\n".utf8))])
        guard case .committed = try await writer.commit([pulled]) else {
            Issue.record("no commit")
            return
        }
        #expect(try git(["diff", "--cached", "--name-only"], in: repo.path) == "notes/n2.json\n", "only the user's own staged change is left")
        #expect(try git(["show", ":notes/n2.json"], in: repo.path) == "{\"mine\":true}\n", "what the user staged is kept")
        #expect(try git(["show", ":notes/n1.json"], in: repo.path) == "{\"pulled\":1}\n", "the index follows the commit")
    }

    /// A folder whose tree is many times the piece it is merged in (4,000 files, 180 KB): changes
    /// at its start, its end, across the pieces' edges and in a new folder inside it make the
    /// tree git's index makes.
    @Test func aFolderLargerThanAPieceOfItsTreeIsMergedAsGitsIndexWould() async throws {
        let repo = try TempFolder("git-tree-large")
        defer { repo.remove() }
        try git(["init", "-q", "-b", "main"], in: repo.path)
        let blob = try gitWith(["hash-object", "-w", "--stdin"], in: repo.path, input: Array("{}\n".utf8)).trimmingCharacters(in: .whitespacesAndNewlines)
        let names = (0..<4_000).map { String(format: "records/r%05d.json", $0 * 2) }
        let info = names.map { "100644 \(blob)\t\($0)\0" }.joined() + "100644 \(blob)\tREADME.json\0"
        try gitWith(["update-index", "--add", "-z", "--index-info"], in: repo.path, input: Array(info.utf8))
        let tree = try git(["write-tree"], in: repo.path).trimmingCharacters(in: .whitespacesAndNewlines)
        let start = try git(["commit-tree", tree, "-m", "start"], in: repo.path).trimmingCharacters(in: .whitespacesAndNewlines)
        try git(["update-ref", "refs/heads/server", start], in: repo.path)
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .branch("server"))
        let bytes = Array("{\"new\":true}\n".utf8)
        let plans = [
            plan([.put(path: "records/a.json", bytes: bytes), .put(path: "records/r00001.json", bytes: bytes), .remove(path: "records/r00000.json")]),
            plan((1_390..<1_410).map { .put(path: String(format: "records/r%05d.json", $0), bytes: bytes) } + [.remove(path: "records/r07998.json")]),
            plan([.put(path: "records/zz.json", bytes: bytes), .put(path: "records/r04000/inner.json", bytes: bytes), .remove(path: "records/r04002.json")]),
        ]
        let expected = try oracle(repo, parent: start, plans)
        guard case .committed(let commit) = try await writer.commit(plans) else {
            Issue.record("no commit")
            return
        }
        let made = try git(["rev-parse", commit + "^{tree}"], in: repo.path).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made == expected, "\((try? git(["diff-tree", "-r", expected, made], in: repo.path)) ?? "")")
        #expect(try git(["rev-list", "--count", "server"], in: repo.path) == "4\n")
        #expect(try gitWith(["fsck", "--no-progress", "--strict", "--no-dangling"], in: repo.path).isEmpty)
    }

    /// A repository without a commit yet: the first commit is docsync's, its tree made from nothing.
    @Test func theFirstCommitOfAnUnbornBranchIsMadeFromNothing() async throws {
        let repo = try TempFolder("git-tree-unborn")
        defer { repo.remove() }
        try git(["init", "-q", "-b", "main"], in: repo.path)
        try repo.write("notes/a.json", "{}\n")
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        guard case .committed = try await writer.commit([plan([.put(path: "notes/a.json", bytes: Array("{}\n".utf8))])]) else {
            Issue.record("no first commit")
            return
        }
        #expect(try git(["ls-tree", "-r", "--name-only", "HEAD"], in: repo.path) == "notes/a.json\n")
        #expect(try git(["rev-list", "--count", "HEAD"], in: repo.path) == "1\n")
        #expect(try git(["status", "--porcelain"], in: repo.path).isEmpty, "the index and the work tree agree with the commit")
    }
}

/// Runs git in `folder` with `env` added and `input` on its standard input; what it printed.
@discardableResult
func gitWith(_ arguments: [String], in folder: String, env extra: [String: String] = [:], input: [UInt8] = []) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["git", "-C", folder] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
    let (stdin, out, err) = (Pipe(), Pipe(), Pipe())
    process.standardInput = stdin
    process.standardOutput = out
    process.standardError = err
    try process.run()
    stdin.fileHandleForWriting.write(Data(input))
    try stdin.fileHandleForWriting.close()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw ProcessFailure("git \(arguments): \(errors)") }
    return text
}
