@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// The agent writes the user's next index itself when a commit replaces entries the index holds
/// (`IndexPatch`), where `update-index --index-info` did: what it writes must be what git writes,
/// byte for byte, in every version and with every kind of entry; what it does not know for
/// certain must be left to git with nothing written; and no bytes on disk can crash it.
@Suite struct IndexPatchTests {
    /// A repository whose index holds real files in nested folders (their times set in the past,
    /// so none is racily clean), entries of every mode, a non-ASCII name, a path of 5,000 bytes and
    /// a cache tree; with `extended`, a skip-worktree entry; with `conflict`, a path at stages 1
    /// to 3 and its resolve-undo record. Written as `version`.
    func repository(format: String, version: Int, extended: Bool, conflict: Bool = false, files: Int = 300) async throws -> (TempFolder, GitRunner) {
        let repo = try TempFolder("index-patch-\(format)-\(version)")
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main", "--object-format=\(format)"])
        try await git.check(["config", "core.trustctime", "false"])
        var paths: [String] = []
        for n in 0..<files { paths.append(String(format: "records/r%05d.json", n * 3)) }
        paths += ["a/b/c/deep.json", "a/b/side.json", "a/top.json", "é.json", "z.json"]
        for path in paths { try repo.write(path, "{\"path\":\"\(path)\"}\n") }
        let past = [timespec(tv_sec: 1_600_000_000, tv_nsec: 0), timespec(tv_sec: 1_600_000_000, tv_nsec: 0)]
        for path in paths { _ = utimensat(AT_FDCWD, repo.file(path), past, 0) }
        try await git.check(["add", "-A"])
        let blob = try await git.check(["hash-object", "-w", "--stdin"], input: Array("{}\n".utf8)).text
        let commit = String(repeating: "c", count: blob.count)
        let info = ["100755 \(blob)\ttool.sh", "120000 \(blob)\tlink", "160000 \(commit)\tvendor/lib", "100644 \(blob)\tlong/" + String(repeating: "x", count: 5_000)]
        try await git.check(["update-index", "--add", "-z", "--index-info"], input: Array(info.map { $0 + "\0" }.joined().utf8))
        _ = try await git.check(["write-tree"])
        if extended { try await git.check(["update-index", "--skip-worktree", "records/r00003.json"]) }
        if conflict {
            let stages = (1...3).map { "100644 \(blob) \($0)\tconflict.json\0" }.joined()
            try await git.check(["update-index", "--add", "-z", "--index-info"], input: Array(stages.utf8))
            try await git.check(["update-index", "--add", "--cacheinfo", "100644,\(blob),conflict.json"])
        }
        try await git.check(["update-index", "--index-version", "\(version)"])
        return (repo, git)
    }

    /// `mode hash` of a new blob for `path`.
    func newEntry(_ git: GitRunner, _ path: String, mode: String = "100644") async throws -> String {
        "\(mode) " + (try await git.check(["hash-object", "-w", "--stdin"], input: Array("{\"new\":\"\(path)\"}\n".utf8)).text)
    }

    /// The index `update-index --index-info` writes from a copy of the repository's for
    /// `changes` (only the paths whose staged entry is the old one, as the agent asks), and the
    /// bytes of it.
    func gitsIndex(_ repo: TempFolder, _ git: GitRunner, _ changes: IndexPatch.Changes) async throws -> [UInt8] {
        let copy = repo.file("git-index")
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: repo.file(".git/index"), toPath: copy)
        let some = changes.values.compactMap { $0.new ?? $0.old }.first!
        let staged = GitIndexFile.entries(of: Set(changes.keys), in: copy, hashSize: some.count > 50 ? 32 : 20) ?? [:]
        let lines = changes.filter { staged[$0.key] == $0.value.old }
            .map { "\($0.value.new ?? GitRepository.removedEntry(of: $0.value.old))\t\($0.key)\0" }.joined()
        try await git.check(["update-index", "-z", "--index-info"], input: Array(lines.utf8), extra: ["GIT_INDEX_FILE": copy])
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: copy)))
    }

    /// Six versions and formats of a small index, and two of one larger than the pieces the
    /// patch reads (64 KiB) and writes (256 KiB) in.
    @Test(arguments: [
        ("sha1", 2, false, 300), ("sha1", 3, true, 300), ("sha1", 4, false, 300), ("sha1", 4, true, 300), ("sha256", 2, false, 300),
        ("sha256", 4, true, 300), ("sha1", 2, false, 8_000), ("sha1", 4, true, 8_000),
    ])
    func theIndexWrittenIsTheOneGitWritesInEveryVersion(format: String, version: Int, extended: Bool, files: Int) async throws {
        let (repo, git) = try await repository(format: format, version: version, extended: extended, conflict: true, files: files)
        defer { repo.remove() }
        let hashSize = format == "sha1" ? 20 : 32
        let index = repo.file(".git/index")
        let listed = try #require(GitIndexFile.entries(of: ["records/r00300.json", "a/b/c/deep.json", "tool.sh", "é.json", "z.json", "records/r00006.json"], in: index, hashSize: hashSize))
        var changes: IndexPatch.Changes = [:]
        for path in ["records/r00300.json", "a/b/c/deep.json", "é.json", "records/r00006.json"] { changes[path] = (listed[path]!, try await newEntry(git, path)) }
        changes["tool.sh"] = (listed["tool.sh"]!, try await newEntry(git, "tool.sh", mode: "100644"))
        changes["z.json"] = (try await newEntry(git, "z-other"), try await newEntry(git, "z.json"))  // the user staged otherwise
        let expected = try await gitsIndex(repo, git, changes)
        let ours = repo.file("ours")
        let outcome = try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: hashSize)
        #expect(outcome == .written(changed: 5))
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: ours)))
        #expect(written.count > (files > 1_000 ? 300_000 : 0), "\(written.count) bytes")
        #expect(written == expected, "\(written.count) bytes against git's \(expected.count); first difference at \(zip(written, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
        // And git reads it: its checksum, its entries, and the cache tree it keeps.
        let env = ["GIT_INDEX_FILE": ours]
        #expect(try await git.check(["ls-files", "-s"], extra: env).stdout == (try await git.check(["ls-files", "-s"], extra: ["GIT_INDEX_FILE": repo.file("git-index")]).stdout))
    }

    /// Paths added and removed beside paths replaced (first, last and in between, into folders
    /// the index has and one it has not, in a version 4 index whose names are kept as what
    /// differs from the last): the index written is git's, byte for byte, its entries counted anew.
    @Test(arguments: [
        ("sha1", 2, false, 300), ("sha1", 3, true, 300), ("sha1", 4, false, 300), ("sha1", 4, true, 300), ("sha256", 4, true, 300),
        ("sha1", 2, false, 8_000), ("sha1", 4, true, 8_000),
    ])
    func pathsAddedAndRemovedAreWrittenAsGitWritesThem(format: String, version: Int, extended: Bool, files: Int) async throws {
        let (repo, git) = try await repository(format: format, version: version, extended: extended, conflict: true, files: files)
        defer { repo.remove() }
        let hashSize = format == "sha1" ? 20 : 32
        let index = repo.file(".git/index")
        let removed = ["a/b/c/deep.json", "records/r00009.json", "a/b/side.json", "é.json", "records/r00300.json"]
        let replaced = ["records/r00303.json", "tool.sh"]
        let listed = try #require(GitIndexFile.entries(of: Set(removed + replaced), in: index, hashSize: hashSize))
        var changes: IndexPatch.Changes = [:]
        for path in removed { changes[path] = (listed[path]!, nil) }
        for path in replaced { changes[path] = (listed[path]!, try await newEntry(git, path)) }
        let added = ["0first.json", "a/b/c/new.json", "records/r00001.json", "records/r00301.json", "aaa.json", "new/folder/x.json", "zz/last.json"]
        for path in added { changes[path] = (nil, try await newEntry(git, path)) }
        let expected = try await gitsIndex(repo, git, changes)
        let ours = repo.file("ours")
        #expect(try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: hashSize) == .written(changed: removed.count + replaced.count + added.count))
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: ours)))
        #expect(written == expected, "\(written.count) bytes against git's \(expected.count); first difference at \(zip(written, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
        let listing = try await git.check(["ls-files", "-s"], extra: ["GIT_INDEX_FILE": ours]).stdout
        #expect(listing == (try await git.check(["ls-files", "-s"], extra: ["GIT_INDEX_FILE": repo.file("git-index")]).stdout))
        let text = String(decoding: listing, as: UTF8.self)
        for path in added { #expect(text.contains("\t\(path)\n")) }
        for path in removed { #expect(!text.contains("\t\(path)\n")) }
    }

    /// An addition or removal the patch cannot make as git would is left to `update-index`, with
    /// nothing written: a path the index holds already (staged by the user, or unmerged), one
    /// under a file of the index or over a folder of it, one git may refuse, a mode other than a
    /// file's, two added one under the other; a removal the user staged otherwise or already made.
    @Test func additionsAndRemovalsThePatchCannotMakeAreLeftToGit() async throws {
        let (repo, git) = try await repository(format: "sha1", version: 4, extended: false)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let blob = try await newEntry(git, "x").split(separator: " ")[1]
        try await git.check(["update-index", "--add", "-z", "--index-info"], input: Array((1...3).map { "100644 \(blob) \($0)\tunmerged.json\0" }.joined().utf8))
        let ours = repo.file("ours")
        let listed = try #require(GitIndexFile.entries(of: ["z.json"], in: index, hashSize: 20))
        func leftToGit(_ why: String, _ changes: IndexPatch.Changes) throws {
            let outcome = try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: 20)
            guard case .leftToGit(let said) = outcome, said.contains(why) else {
                Issue.record("\(outcome), expected left to git for \(why)")
                return
            }
            #expect(!repo.exists("ours"), "nothing is left written for \(why)")
        }
        let entry = try await newEntry(git, "new")
        try leftToGit("the index holds it", ["records/r00006.json": (nil, entry)])
        try leftToGit("the index holds it", ["unmerged.json": (nil, entry)])
        try leftToGit("a file of the index", ["z.json/inside.json": (nil, entry)])
        try leftToGit("the index has a folder there", ["a/b": (nil, entry)])
        try leftToGit("git may refuse", [".git/hooks/x": (nil, entry)])
        try leftToGit("git may refuse", ["a/../escape.json": (nil, entry)])
        try leftToGit("git may refuse", ["ré/x.json": (nil, entry)])
        try leftToGit("added as mode 120000", ["link2": (nil, "120000 \(blob)")])
        try leftToGit("under a file also added", ["n": (nil, entry), "n/x.json": (nil, entry)])
        try leftToGit("staged something else", ["z.json": (entry, nil)])
        try leftToGit("not in the index", ["gone.json": (listed["z.json"]!, nil)])
        #expect(try IndexPatch.write(from: index, to: ours, changes: ["n/x.json": (nil, entry), "z.json": (listed["z.json"]!, nil)], hashSize: 20) == .written(changed: 2))
        // A path added after the last entry, in an index with unmerged entries: git's bytes.
        try await git.check(["update-index", "--force-remove", "é.json"])
        let last: IndexPatch.Changes = ["zz/after-the-last.json": (nil, entry)]
        let expected = try await gitsIndex(repo, git, last)
        #expect(try IndexPatch.write(from: index, to: ours, changes: last, hashSize: 20) == .written(changed: 1))
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: ours))) == expected)
    }

    /// Git's `varint`, as the reader takes it back: one byte below 128, and each byte after the
    /// first standing for one more than it holds.
    @Test func theVersion4NameCountIsGitsVarint() {
        #expect(PatchEntryBytes.varint(0) == [0])
        #expect(PatchEntryBytes.varint(127) == [127])
        #expect(PatchEntryBytes.varint(128) == [0x80, 0])
        #expect(PatchEntryBytes.varint(255) == [0x80, 0x7f])
        #expect(PatchEntryBytes.varint(16_511) == [0xff, 0x7f])
        #expect(PatchEntryBytes.varint(16_512) == [0x80, 0x80, 0])
    }

    /// A commit that adds, removes and replaces files, on the checked-out branch: the user's
    /// index follows it without `update-index` (a git that logs what it is asked to run stands
    /// in for git), and `git status` is clean. A name the patch leaves to git does go to
    /// `update-index`: the log is read right.
    @Test func aCommitOfFilesAddedRemovedAndReplacedIsFollowedWithoutUpdateIndex() async throws {
        let (repo, tools) = (try TempFolder("index-patch-commit"), try TempFolder("index-patch-logging-git"))
        defer { for folder in [repo, tools] { folder.remove() } }
        let real = try GitRunner.find(in: repo.path)
        try await real.check(["init", "-q", "-b", "main"])
        for n in 1...3 { try repo.write("notes/n\(n).json", "{\"n\":\(n)}\n") }
        try await real.check(["add", "-A"])
        try await real.check(["-c", "user.name=u", "-c", "user.email=u@localhost", "commit", "-qm", "start"])
        let log = tools.file("git-log")
        try tools.write("logging-git", "#!/bin/sh\necho \"$*\" >> '\(log)'\nexec '\(real.executable)' \"$@\"\n")
        #expect(chmod(tools.file("logging-git"), 0o755) == 0)
        let located = try await GitRepository.locate(folder: repo.path)
        let repository = GitRepository(
            workTree: located.workTree, gitDir: located.gitDir, commonDir: located.commonDir, prefix: located.prefix,
            git: GitRunner(executable: tools.file("logging-git"), directory: located.workTree), objects: located.objects)
        let writer = GitHistoryWriter(repository: repository, target: .checkedOut)
        func commit(_ entries: [GitCommitPlan.Entry]) async throws -> String {
            try? FileManager.default.removeItem(atPath: log)
            guard case .committed = try await writer.commit([.pulled(entries)]) else { throw GitError("no commit") }
            return (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        }
        var ran = try await commit([
            .put(path: "notes/n4.json", bytes: Array("{\"n\":4}\n".utf8)), .remove(path: "notes/n1.json"),
            .put(path: "notes/n2.json", bytes: Array("{\"n\":20}\n".utf8)),
        ])
        #expect(!ran.contains("update-index") && !ran.contains("ls-files"), "git was asked: \(ran)")
        #expect(writer.lastIndex.current?.stamp == IndexFile.stamp(repo.file(".git/index")), "the index put in place is remembered")
        for (path, bytes) in [("notes/n2.json", "{\"n\":20}\n"), ("notes/n4.json", "{\"n\":4}\n")] { try repo.write(path, bytes) }
        try FileManager.default.removeItem(atPath: repo.file("notes/n1.json"))
        let status = try await real.check(["status", "--porcelain"]).text
        #expect(status.isEmpty, "the index follows the commit: \(status)")
        #expect(try await real.check(["ls-files"]).text == "notes/n2.json\nnotes/n3.json\nnotes/n4.json")
        ran = try await commit([.put(path: "notes/ré.json", bytes: Array("{}\n".utf8))])
        #expect(ran.contains("update-index"), "a name the patch leaves to git goes to update-index: \(ran)")
    }

    /// An entry racily clean against the old index (its file changed in the second the index was
    /// written, with the same size) is smudged: once the new index, written in a later second,
    /// makes the entry look settled, git must still look at the file's content (git's racy-git rule).
    @Test func aRacilyCleanEntryIsSmudgedSoASameSecondChangeIsSeen() async throws {
        let (repo, git) = try await repository(format: "sha1", version: 2, extended: false)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        try repo.write("racy.json", "{\"v\":1}\n")
        try await git.check(["add", "racy.json"])
        var st = stat()
        #expect(stat(repo.file("racy.json"), &st) == 0)
        let sameSecond = [st.st_mtim, st.st_mtim]
        #expect(utimensat(AT_FDCWD, index, sameSecond, 0) == 0, "the index written in the file's second")
        // The user's change in that same second, of the same size, in place: its stat is the entry's.
        let handle = try FileHandle(forWritingTo: repo.url("racy.json"))
        try handle.write(contentsOf: Data("{\"v\":2}\n".utf8))
        try handle.close()
        #expect(utimensat(AT_FDCWD, repo.file("racy.json"), sameSecond, 0) == 0)
        let listed = try #require(GitIndexFile.entries(of: ["z.json"], in: index, hashSize: 20))
        let changes: IndexPatch.Changes = ["z.json": (listed["z.json"]!, try await newEntry(git, "z.json"))]
        let ours = repo.file(".git/ours")
        #expect(try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: 20) == .written(changed: 1))
        #expect(rename(ours, index) == 0)
        let later = [timespec(tv_sec: st.st_mtim.tv_sec + 10, tv_nsec: 0), timespec(tv_sec: st.st_mtim.tv_sec + 10, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, index, later, 0) == 0, "the new index written seconds later")
        let status = try await git.check(["status", "--porcelain", "--", "racy.json"]).text
        #expect(status == "AM racy.json", "the change is seen in the work tree: \(status)")
    }

    /// What the patch does not know for certain is left to `update-index`, with nothing written:
    /// an entry to replace with extended flags, an extension it does not write (the untracked
    /// cache), an index without a checksum, and one whose checksum does not match.
    @Test func whatThePatchDoesNotKnowForCertainIsLeftToGit() async throws {
        let (repo, git) = try await repository(format: "sha1", version: 3, extended: true)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let (ours, skipped, plain) = (repo.file("ours"), "records/r00003.json", "records/r00006.json")
        let listed = try #require(GitIndexFile.entries(of: [skipped, plain], in: index, hashSize: 20))
        func changes(_ path: String) async throws -> IndexPatch.Changes { [path: (listed[path]!, try await newEntry(git, path))] }
        func leftToGit(_ why: String, _ changes: IndexPatch.Changes, from file: String = index) throws -> Bool {
            let outcome = try IndexPatch.write(from: file, to: ours, changes: changes, hashSize: 20)
            guard case .leftToGit(let said) = outcome, said.contains(why) else {
                Issue.record("\(outcome), expected left to git for \(why)")
                return false
            }
            return !repo.exists("ours")
        }
        #expect(try leftToGit("extended flags", try await changes(skipped)))
        #expect(try IndexPatch.write(from: index, to: ours, changes: try await changes(plain), hashSize: 20) == .written(changed: 1), "another entry is replaced")

        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: index)))
        let noChecksum = repo.file("no-checksum")
        try Data(whole.dropLast(20) + [UInt8](repeating: 0, count: 20)).write(to: URL(fileURLWithPath: noChecksum))
        #expect(try leftToGit("no checksum", try await changes(plain), from: noChecksum))
        var damaged = whole
        damaged[100] ^= 1
        try Data(damaged).write(to: URL(fileURLWithPath: noChecksum))
        #expect(try leftToGit("damaged", try await changes(plain), from: noChecksum))

        try await git.check(["config", "core.untrackedCache", "true"])
        try await git.check(["update-index", "--untracked-cache"])
        _ = try await git.check(["status", "--porcelain"])
        #expect(try leftToGit("UNTR", try await changes(plain)))
    }

    /// A replaced path that is a folder of the cache tree (git drops that folder's node), and a
    /// tree that does not read as git writes one, are left to git; the folders of the replaced
    /// paths are marked invalid and nothing else changes.
    @Test func theCacheTreeMarksTheReplacedPathsFoldersInvalid() {
        let hash = [UInt8](repeating: 7, count: 20)
        func node(_ name: String, _ count: Int, _ subtrees: Int) -> [UInt8] {
            Array(name.utf8) + [0] + Array("\(count) \(subtrees)\n".utf8) + (count >= 0 ? hash : [])
        }
        let tree = node("", 4, 2) + node("a", 2, 1) + node("b", 1, 0) + node("c.json", 1, 0)
        let invalidated = IndexCacheTree(changed: [Array("a/b/x.json".utf8)], hashSize: 20).invalidated(tree)
        #expect(invalidated == node("", -1, 2) + node("a", -1, 1) + node("b", -1, 0) + node("c.json", 1, 0))
        #expect(IndexCacheTree(changed: [Array("z.json".utf8)], hashSize: 20).invalidated(tree) == node("", -1, 2) + tree.dropFirst(node("", 4, 2).count))
        #expect(IndexCacheTree(changed: [Array("c.json".utf8)], hashSize: 20).invalidated(tree) == nil, "a folder git would drop")
        for cut in 0..<tree.count {
            #expect(IndexCacheTree(changed: [Array("a/b/x.json".utf8)], hashSize: 20).invalidated(Array(tree[..<cut])) == nil, "cut at \(cut)")
        }
    }

    /// An index cut anywhere, or with bytes changed at random, is left to git with nothing
    /// written (its checksum no longer matches), and never crashes the agent.
    @Test(arguments: [2, 4]) func anIndexCutOrDamagedAnywhereIsLeftToGit(version: Int) async throws {
        let (repo, git) = try await repository(format: "sha1", version: version, extended: version > 2, conflict: true)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let listed = try #require(GitIndexFile.entries(of: ["a/top.json", "z.json"], in: index, hashSize: 20))
        let changes: IndexPatch.Changes = [
            "a/top.json": (listed["a/top.json"]!, try await newEntry(git, "a/top.json")), "z.json": (listed["z.json"]!, nil),
            "a/new.json": (nil, try await newEntry(git, "a/new.json")),
        ]
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: index)))
        let (damaged, ours) = (repo.file("damaged"), repo.file("ours"))
        for bytes in Damage.cuts(of: whole, count: 100) + Damage.changed(whole, count: 100, most: 8) {
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))
            let outcome = try IndexPatch.write(from: damaged, to: ours, changes: changes, hashSize: 20)
            guard case .leftToGit = outcome else {
                Issue.record("\(bytes.count) bytes: \(outcome)")
                continue
            }
            #expect(!repo.exists("ours"))
        }
    }

    /// Entries kept as they are are passed over on the bytes read (``PlainRun``), up to the
    /// first the patch must look at: a path changed, one before which a path is added or under
    /// which one lies, and one racily clean; what comes after it is passed over again.
    @Test func aRunOfKeptEntriesEndsAtTheFirstThePatchMustLookAt() async throws {
        let (repo, git) = try await repository(format: "sha1", version: 2, extended: false, files: 300)
        defer { repo.remove() }
        let index = try [UInt8](Data(contentsOf: URL(fileURLWithPath: repo.file(".git/index"))))
        let paths = try await git.check(["ls-files", "-z"]).stdout.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        /// Where entry `k` starts: version 2's entries are 62 bytes and the name, padded to 8.
        func offset(_ k: Int) -> Int { 12 + paths[..<k].reduce(0) { $0 + ((62 + $1.utf8.count + 8) & ~7) } }
        func run(from k: Int, changed: [String] = [], adding: String? = nil, seconds: UInt32 = .max) -> Int {
            let run = PlainRun(hashSize: 20, filter: PathFilter(changed.map { Array($0.utf8) }), nextAdded: adding.map { Array($0.utf8) }, indexSeconds: seconds)
            let (end, count) = index.withUnsafeBufferPointer { run.pass($0, from: offset(k), limit: paths.count - k) }
            #expect(end == offset(k + count))
            return count
        }
        let long = try #require(paths.firstIndex { $0.hasPrefix("long/") })
        let changed = try #require(paths.firstIndex(of: "records/r00300.json"))
        #expect(run(from: 0) == long, "a name of 5,000 bytes is the general path's")
        #expect(run(from: long + 1, changed: ["records/r00300.json"]) == changed - long - 1)
        #expect(run(from: long + 1, adding: "records/r00301.json") == changed - long)
        #expect(run(from: long + 1, adding: "records/r00300.json/x.json") == changed - long - 1, "a file a path is added under")
        #expect(run(from: 0, seconds: 0) == 0, "every file's entry is racily clean against an index of 1970")
        #expect(run(from: changed + 1, changed: ["records/r00300.json"]) == paths.count - changed - 1, "then on to the last entry")
    }

    /// While the index is the very file the agent put in place last, its checksum is compared
    /// with the one the agent wrote, not hashed again, and the index written is still git's byte
    /// for byte. Once it is another file, or its bytes changed, it is hashed and checked again.
    @Test func anIndexTheAgentPutInPlaceIsNotHashedAgainWhileItIsThere() async throws {
        let (repo, git) = try await repository(format: "sha1", version: 2, extended: false, files: 8_000)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let listed = try #require(GitIndexFile.entries(of: ["records/r00300.json", "z.json"], in: index, hashSize: 20))
        let changes: IndexPatch.Changes = [
            "records/r00300.json": (listed["records/r00300.json"]!, try await newEntry(git, "records/r00300.json")),
            "z.json": (listed["z.json"]!, nil), "a/new.json": (nil, try await newEntry(git, "a/new.json")),
        ]
        let expected = try await gitsIndex(repo, git, changes)
        // Put in place as a commit does: the lock linked from the agent's file, renamed over.
        let scratch = repo.file(".git/docsync-index")
        try FileManager.default.copyItem(atPath: index, toPath: scratch)
        #expect(link(scratch, index + ".lock") == 0 && rename(index + ".lock", index) == 0)
        let known = try #require(IndexFile.placed(index, from: scratch, hashSize: 20))
        #expect(!FileManager.default.fileExists(atPath: scratch))
        let trailer = Array(try Data(contentsOf: URL(fileURLWithPath: index)).suffix(20))
        #expect(known.stamp == IndexFile.stamp(index) && known.checksum == trailer)

        let ours = repo.file("ours")
        #expect(try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: 20, known: known) == .written(changed: 3))
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: ours))) == expected)
        try FileManager.default.removeItem(atPath: ours)
        // The checksum is the one known, not the file's hash: a wrong one known is a mismatch.
        let wrong = IndexFile.Written(stamp: known.stamp, checksum: known.checksum.map { $0 ^ 1 })
        guard case .leftToGit = try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: 20, known: wrong) else {
            Issue.record("the known checksum was not the one compared")
            return
        }
        #expect(!repo.exists("ours"))
        // Bytes changed in the middle: the file's times move, and it is hashed and found damaged.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: index)))
        bytes[bytes.count / 2] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: index))
        #expect(IndexFile.stamp(index) != known.stamp)
        guard case .leftToGit = try IndexPatch.write(from: index, to: ours, changes: changes, hashSize: 20, known: known) else {
            Issue.record("a changed index was not hashed again")
            return
        }
        // Another file in place (the user's git wrote one): nothing is remembered of it.
        try FileManager.default.copyItem(atPath: index, toPath: scratch)
        #expect(IndexFile.placed(index, from: scratch, hashSize: 20) == nil)
    }
}
