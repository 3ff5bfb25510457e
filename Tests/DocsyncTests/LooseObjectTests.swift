@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// The agent writes git's objects itself (`LooseObject`): each must be the object git would
/// write, under the name git gives it, readable by git and passing `git fsck --strict`, whatever
/// its size and however its pieces come; and where git writes objects its own way (a shared
/// repository, objects flushed to disk), git writes them.
@Suite struct LooseObjectTests {
    func repository(_ name: String, format: String = "sha1", config: [String] = []) throws -> TempFolder {
        let repo = try TempFolder(name)
        try git(["init", "-q", "-b", "main", "--object-format=\(format)"], in: repo.path)
        for setting in config {
            let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
            try git(["config", parts[0], parts[1]], in: repo.path)
        }
        return repo
    }

    /// Sizes around the point where an object is held in a file rather than in memory, and one
    /// of several MB in uneven pieces: each is git's own object, by name and by content.
    @Test(arguments: ["sha1", "sha256"]) func objectsAreTheOnesGitWritesWhateverTheirSize(format: String) async throws {
        let repo = try repository("loose-\(format)", format: format)
        defer { repo.remove() }
        let located = try await GitRepository.locate(folder: repo.path)
        let store = try #require(located.objects, "a plain repository's objects are written by the agent")
        #expect(store.hashSize == (format == "sha1" ? 20 : 32))
        var random = SystemRandomNumberGenerator()
        let spill = 64 << 10
        for size in [0, 1, 4_096, spill - 1, spill, spill + 1, 40 * spill + 12_345] {
            let bytes = (0..<(size + 7) / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }.prefix(size).map { $0 }
            let object = LooseObject("blob", in: store, spill: spill)
            var at = 0
            while at < bytes.count {
                let next = min(bytes.count, at + Int.random(in: 1...100_000, using: &random))
                try object.append(bytes[at..<next])
                at = next
            }
            let hash = try object.finish()
            let gits = try gitWith(["hash-object", "--stdin"], in: repo.path, input: bytes).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(hash == gits, "\(size) bytes")
            let back = try gitBytes(["cat-file", "blob", hash], in: repo.path)
            #expect(back == bytes, "git reads back the \(size) bytes")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: store.folder).filter { $0.hasPrefix("tmp_obj") }
        #expect(left.isEmpty, "no temporary left in the object folder: \(left)")
        let fsck = try gitWith(["fsck", "--no-progress", "--strict", "--full", "--no-dangling"], in: repo.path)
        #expect(fsck.isEmpty, "\(fsck)")
    }

    /// An object already there is not replaced (its name is its content), and its time is
    /// renewed, as git renews it, so that `git gc` does not take a reused object for an old one.
    @Test func anObjectAlreadyThereIsKeptAndItsTimeRenewed() async throws {
        let repo = try repository("loose-kept")
        defer { repo.remove() }
        let bytes = Array("{\"kept\":true}\n".utf8)
        let hash = try gitWith(["hash-object", "-w", "--stdin"], in: repo.path, input: bytes).trimmingCharacters(in: .whitespacesAndNewlines)
        let path = repo.file(".git/objects/\(hash.prefix(2))/\(hash.dropFirst(2))")
        var old = [timeval(tv_sec: 1_577_836_800, tv_usec: 0), timeval(tv_sec: 1_577_836_800, tv_usec: 0)]
        #expect(utimes(path, &old) == 0)
        let before = try FileManager.default.attributesOfItem(atPath: path)
        let store = try #require(try await GitRepository.locate(folder: repo.path).objects)
        let object = LooseObject("blob", in: store)
        try object.append(bytes[...])
        #expect(try object.finish() == hash)
        let after = try FileManager.default.attributesOfItem(atPath: path)
        #expect(after[.systemFileNumber] as? Int == before[.systemFileNumber] as? Int, "the same file, not a new one")
        #expect((after[.modificationDate] as? Date ?? .distantPast) > Date(timeIntervalSince1970: 1_600_000_000), "its time renewed")
    }

    /// A path no tree can hold (a NUL ends a name in a tree; an empty part, `..`, `.git`) is
    /// refused with the path named, and nothing is written: `hash-object` used to refuse such a
    /// tree, and the agent, which writes trees now, must too.
    @Test(arguments: ["notes/a\u{0}b.json", "notes//a.json", "notes/../a.json", "notes/.GIT/a.json"])
    func aPathNoTreeCanHoldIsRefusedAndNothingWritten(path: String) async throws {
        let repo = try repository("loose-refused")
        defer { repo.remove() }
        try repo.write("notes/n.json", "{}\n")
        try git(["add", "-A"], in: repo.path)
        try git(["commit", "-qm", "start"], in: repo.path)
        let head = try git(["rev-parse", "HEAD"], in: repo.path)
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        let plan = GitCommitPlan.pulled([.put(path: path, bytes: Array("{}\n".utf8))])
        let refused = await #expect(throws: GitError.self) { _ = try await writer.commit([plan]) }
        #expect(refused?.description.contains("not a path git keeps") == true, "\(refused?.description ?? "-")")
        #expect(try git(["rev-parse", "HEAD"], in: repo.path) == head, "no commit")
        let trees = try gitWith(["cat-file", "--batch-check", "--batch-all-objects"], in: repo.path).split(separator: "\n").filter { $0.contains(" tree ") }
        #expect(trees.count == 2, "no tree beside the start's two: \(trees)")
        #expect(try gitWith(["fsck", "--no-progress", "--strict", "--no-dangling"], in: repo.path).isEmpty)
    }

    /// Where git writes objects its own way, git writes the agent's too, and the commits are
    /// made as before (with a commit encoding, `commit-tree` names it in each commit).
    @Test(arguments: ["core.sharedRepository=group", "core.fsyncObjectFiles=true", "core.fsync=loose-object", "i18n.commitEncoding=ISO-8859-1"])
    func whereGitWritesObjectsItsOwnWayGitWritesThem(setting: String) async throws {
        let repo = try repository("loose-git", config: [setting])
        defer { repo.remove() }
        try repo.write("notes/a.json", "{}\n")
        let located = try await GitRepository.locate(folder: repo.path)
        #expect(located.objects == nil, "\(setting): git writes the objects")
        let writer = GitHistoryWriter(repository: located, target: .checkedOut)
        let plan = GitCommitPlan.pulled([.put(path: "notes/a.json", bytes: Array("{}\n".utf8))])
        guard case .committed = try await writer.commit([plan]) else {
            Issue.record("no commit")
            return
        }
        #expect(try git(["ls-tree", "-r", "--name-only", "HEAD"], in: repo.path) == "notes/a.json\n")
        if setting.hasPrefix("i18n.") { #expect(try git(["cat-file", "commit", "HEAD"], in: repo.path).contains("\nencoding ISO-8859-1\n")) }
        #expect(try gitWith(["fsck", "--no-progress", "--strict"], in: repo.path).isEmpty)
    }
}

extension LooseObjectStore: Equatable {
    public static func == (a: LooseObjectStore, b: LooseObjectStore) -> Bool { a.folder == b.folder && a.hashSize == b.hashSize }
}

/// What git printed, as bytes (a blob's content need not be text).
func gitBytes(_ arguments: [String], in folder: String) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["git", "-C", folder] + arguments
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let bytes = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Array(bytes)
}
