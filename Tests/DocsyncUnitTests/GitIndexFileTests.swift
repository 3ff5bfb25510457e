@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// The agent reads the few entries a commit follows from the user's index itself, where
/// `ls-files` read and checked all of it: the entries must be the ones git lists, in every
/// version of the index and with every kind of entry; an index this reader does not know for
/// certain (split, sparse, broken) is left to git; and no bytes on disk can crash it.
@Suite struct GitIndexFileTests {
    /// A repository whose index holds `files` files in one folder, an executable, a symlink, a
    /// submodule, a conflict (stages 1 to 3 only), a non-ASCII name and a path of 5,000 bytes
    /// (longer than the 12 bits an entry's flags hold); with `extended`, an intent-to-add entry
    /// and a skip-worktree one (flags only versions 3 and 4 have). Written as `version`, with the
    /// cache tree extension `write-tree` adds.
    func repository(format: String, version: Int, extended: Bool, files: Int = 2_000) async throws -> (TempFolder, GitRunner) {
        let repo = try TempFolder("git-index-\(format)-\(version)")
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main", "--object-format=\(format)"])
        let blob = try await git.check(["hash-object", "-w", "--stdin"], input: Array("{}\n".utf8)).line
        let commit = String(repeating: "c", count: blob.count)
        var info = (0..<files).map { String(format: "100644 \(blob)\trecords/r%05d.json", $0 * 3) }
        info += ["100755 \(blob)\ttool.sh", "120000 \(blob)\tlink", "160000 \(commit)\tvendor/lib", "100644 \(blob)\té.json"]
        info += (1...3).map { "100644 \(blob) \($0)\tconflict.json" }
        info.append("100644 \(blob)\tlong/" + String(repeating: "x", count: 5_000))
        try await git.check(["update-index", "--add", "-z", "--index-info"], input: Array(info.map { $0 + "\0" }.joined().utf8))
        if extended {
            try repo.write("ita.json", "{}\n")
            try await git.check(["add", "-N", "ita.json"])
            try await git.check(["update-index", "--skip-worktree", "records/r00003.json"])
        }
        try await git.check(["update-index", "--index-version", "\(version)"])
        return (repo, git)
    }

    /// The stage-0 entries git lists, `mode sha` by path.
    func listed(_ git: GitRunner, index: String? = nil) async throws -> [String: String] {
        let out = try await git.check(["ls-files", "-s", "-z"], extra: index.map { ["GIT_INDEX_FILE": $0] } ?? [:])
        var entries: [String: String] = [:]
        for record in out.stdout.split(separator: 0) {
            let text = String(decoding: record, as: UTF8.self)
            let parts = text.split(separator: "\t", maxSplits: 1)
            let head = parts[0].split(separator: " ")
            if head[2] == "0" { entries[String(parts[1])] = "\(head[0]) \(head[1])" }
        }
        return entries
    }

    @Test(arguments: [("sha1", 2, false), ("sha1", 3, true), ("sha1", 4, false), ("sha1", 4, true), ("sha256", 2, false), ("sha256", 4, true)])
    func theEntriesAreTheOnesGitListsInEveryVersion(format: String, version: Int, extended: Bool) async throws {
        let (repo, git) = try await repository(format: format, version: version, extended: extended)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: index))
        #expect(onDisk[4..<8].elementsEqual([0, 0, 0, UInt8(version)]), "the index is written as version \(version)")
        let expected = try await listed(git)
        let hashSize = format == "sha1" ? 20 : 32
        let wanted = Set(expected.keys).union(["absent.json", "records", "records/", "conflict.json", "vendor"])
        let read = GitIndexFile.entries(of: wanted, in: index, hashSize: hashSize) ?? [:]
        #expect(Self.differences(read, expected) == [], "\(read.count) entries read of \(expected.count)")
        #expect(read["conflict.json"] == nil, "a conflict has no stage-0 entry")
        #expect(read["vendor/lib"]?.hasPrefix("160000 ") == true && read["link"]?.hasPrefix("120000 ") == true)
        // A few asked for, as a trickle's commit asks.
        let few: Set<String> = ["records/r00300.json", "tool.sh", "records/r00301.json"]
        #expect(GitIndexFile.entries(of: few, in: index, hashSize: hashSize) == expected.filter { few.contains($0.key) })
    }

    /// A split index keeps most entries in a second file, and an extension whose name is not a
    /// capital's (`link`, `sdir`, one git has yet to add) changes what the entries mean: left to
    /// git. An extension with a capital's name may be skipped, as git skips one it does not know.
    @Test func anIndexThisReaderDoesNotKnowForCertainIsLeftToGit() async throws {
        let (repo, git) = try await repository(format: "sha1", version: 2, extended: false)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let expected = try await listed(git)
        let wanted = Set(expected.keys)
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: index)))
        for (name, readable) in [("ZZZZ", true), ("zzzz", false), ("sdir", false)] {
            var bytes = Array(whole.dropLast(20))
            bytes += Array(name.utf8) + [0, 0, 0, 3] + [1, 2, 3] + [UInt8](repeating: 0, count: 20)
            try Data(bytes).write(to: URL(fileURLWithPath: index))
            let read = GitIndexFile.entries(of: wanted, in: index, hashSize: 20)
            #expect(readable ? read.map { Self.differences($0, expected) } == [] : read == nil, "extension \(name)")
        }
        try Data(whole).write(to: URL(fileURLWithPath: index))
        try await git.check(["update-index", "--split-index"])
        #expect(GitIndexFile.entries(of: wanted, in: index, hashSize: 20) == nil, "a split index is git's to read")
        #expect(try await git.offThread { GitIndexFile.entries(of: wanted, in: index, hashSize: 20) } == nil)
    }

    /// An index cut anywhere gives nothing or what the whole gives (a cut that leaves as many
    /// bytes as a hash after the entries reads as whole; `update-index`, which follows, checks
    /// the hash); bytes changed at random never crash the agent, and a missing file gives nothing.
    @Test func anIndexCutOrDamagedAnywhereNeverCrashesTheReader() async throws {
        let (repo, _) = try await repository(format: "sha1", version: 4, extended: true, files: 200)
        defer { repo.remove() }
        let index = repo.file(".git/index")
        let wanted: Set<String> = ["records/r00300.json", "tool.sh", "é.json", "ita.json"]
        #expect(GitIndexFile.entries(of: wanted, in: repo.file(".git/index"), hashSize: 20)?.count == 4)
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: index)))
        let expected = GitIndexFile.entries(of: wanted, in: index, hashSize: 20)
        let damaged = repo.file("damaged")
        for cut in Damage.cuts(of: whole, count: 150) {
            try Data(cut).write(to: URL(fileURLWithPath: damaged))
            let read = GitIndexFile.entries(of: wanted, in: damaged, hashSize: 20)
            #expect(read == nil || read == expected, "cut at \(cut.count)")
        }
        for bytes in Damage.changed(whole, count: 150, most: 8) {
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))
            _ = GitIndexFile.entries(of: wanted, in: damaged, hashSize: 20)
        }
        #expect(GitIndexFile.entries(of: wanted, in: repo.file("no-such-index"), hashSize: 20) == nil)
    }

    /// The paths whose entries differ (at most ten, for the message).
    static func differences(_ read: [String: String], _ expected: [String: String]) -> [String] {
        Array(Set(read.keys).union(expected.keys).filter { read[$0] != expected[$0] }.sorted().prefix(10))
    }
}
