import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import Foundation
import Synchronization
import Testing
@testable import DocsyncAgent

/// The agent's writes into the user's folder: never over a save it has not read, never over a
/// file it did not expect to be there.
@Suite struct FileSystemTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func leftovers(_ folder: TempFolder) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tmp") }
    }

    @Test func aFileIsReplacedOnlyWhileItHoldsWhatWasRead() throws {
        let folder = try TempFolder("replace")
        defer { folder.remove() }
        try folder.write("a.json", "read")
        #expect(try FileSystem.replace(folder.file("a.json"), with: bytes("ours"), ifItHolds: bytes("read")))
        #expect(try folder.read("a.json") == "ours")
        // Saved by someone else since it was read: left alone.
        #expect(try !FileSystem.replace(folder.file("a.json"), with: bytes("stale"), ifItHolds: bytes("read")))
        #expect(try folder.read("a.json") == "ours")
        // Deleted meanwhile: not brought back.
        try folder.remove("a.json")
        #expect(try !FileSystem.replace(folder.file("a.json"), with: bytes("stale"), ifItHolds: bytes("ours")))
        #expect(!folder.exists("a.json"))
        #expect(try leftovers(folder).isEmpty, "no temp files left behind")
    }

    /// A FIFO where a file was (put there by anyone, at any moment): a plain open waits for a
    /// writer that may never come, and every reader of the folder's files (the scan, the pull
    /// reading a file before writing over it, the git committer) would stop with it. It is
    /// refused at once, by path and through the gate alike.
    @Test func aFIFOIsRefusedAtOnceNotWaitedOn() async throws {
        let folder = try TempFolder("fifo")
        defer { folder.remove() }
        #expect(mkfifo(folder.file("x.json"), 0o644) == 0)
        let gate = try PathGate(root: folder.path, staging: ".staging")
        let refused = Mutex<[String]>([])
        let reader = Thread {
            for read in [{ try FileSystem.read(folder.file("x.json"), maxSize: 1 << 20) }, { try FileSystem.read(gate.file("x.json"), maxSize: 1 << 20) }] {
                do {
                    _ = try read()
                } catch {
                    refused.withLock { $0.append("\(error)") }
                }
            }
        }
        reader.start()
        let done = await eventually(timeout: .seconds(5)) { refused.withLock { $0.count } == 2 }
        if !done {  // let the waiting open go, so that the run does not hang on the finding
            for _ in 0..<2 {
                let fd = open(folder.file("x.json"), O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
            }
        }
        #expect(done, "both reads return at once")
        #expect(refused.withLock { $0 }.allSatisfy { $0.contains("not a regular file") }, "\(refused.withLock { $0 })")
    }

    /// A write is recorded with the stat of the file it put in place, not with whatever is at
    /// the path when the record is made: an editor's save landing in between then differs from
    /// the record (another inode), and is read. Both ways the agent writes into the folder.
    @Test func theStatAWriteGivesIsOfTheFileItPutThere() throws {
        let folder = try TempFolder("written-stat")
        defer { folder.remove() }
        try folder.write("cache.bin", "from the server")
        func editorSave(_ name: String) throws {
            try folder.write("." + name + ".swp", "the user's")
            #expect(rename(folder.file("." + name + ".swp"), folder.file(name)) == 0)
        }
        let replaced = try #require(try FileSystem.replacing(GatedFile.trusted(folder.file("a.json")), with: bytes("ours"), ifItHolds: nil))
        let placed = try #require(try FileSystem.placeCopy(of: folder.file("cache.bin"), at: GatedFile.trusted(folder.file("b.bin"))))
        #expect(replaced.size == 4 && placed.size == 15)
        #expect(replaced.inode == FileSystem.info(folder.file("a.json"))?.inode && placed.inode == FileSystem.info(folder.file("b.bin"))?.inode)
        for name in ["a.json", "b.bin"] { try editorSave(name) }
        #expect(replaced.inode != FileSystem.info(folder.file("a.json"))?.inode)
        #expect(placed.inode != FileSystem.info(folder.file("b.bin"))?.inode)
        #expect(try FileSystem.replacing(GatedFile.trusted(folder.file("a.json")), with: bytes("stale"), ifItHolds: bytes("ours")) == nil)
        #expect(try folder.read("a.json") == "the user's")
    }

    /// Regression: the temporary beside a file with a 240-byte name was over NAME_MAX, so every
    /// write from the server into such a file failed ("create …tmp").
    @Test func aFileWhoseNameIsNearTheLimitIsReplacedAtomically() throws {
        let folder = try TempFolder("long-name")
        defer { folder.remove() }
        for name in [String(repeating: "n", count: 250) + ".json", String(repeating: "é", count: 125) + ".json"] {
            #expect(name.utf8.count > 240 && name.utf8.count <= 255)
            try folder.write(name, "read")
            #expect(try FileSystem.replace(folder.file(name), with: bytes("ours"), ifItHolds: bytes("read")))
            #expect(try folder.read(name) == "ours")
        }
        #expect(try leftovers(folder).isEmpty)
        #expect(FileSystem.prefix(of: "aé", bytes: 2) == "a", "cut between characters, never inside one")
    }

    /// The start-up scan walks in the index's order, a chunk at a time: it finds what the plain
    /// walk finds, skips what is ignored, and clears a dead writer's temporary file.
    @Test func theSortedWalkFindsWhatTheWalkFinds() throws {
        let folder = try TempFolder("walk")
        defer { folder.remove() }
        var expected = Set<String>()
        for a in 0..<3 {
            for b in 0..<7 {
                for c in 0..<5 {
                    let path = "t\(a)/f\(b)/d\(c).json"
                    try folder.write(path, "{}")
                    expected.insert(path)
                }
                try folder.write("t\(a)/f\(b)/deep/er/x.json", "{}")
                expected.insert("t\(a)/f\(b)/deep/er/x.json")
            }
        }
        try folder.write("top.json", "{}")
        expected.insert("top.json")
        try folder.write(".hidden/h.json", "{}")
        try folder.write("t0/f0/notes.json~", "{}")
        // A temporary file left by a writer that no longer runs (pid 2^22 + 1 is above Linux's pid limit).
        try folder.write("t1/.a.json.docsync-4194305-1.tmp", "{}")
        try folder.write(".docsyncignore", "t2/f3/\n")
        let walker = TreeWalker(root: folder.path, ignore: TreeWalker.ignoreRules(root: folder.path))
        var walk = walker.sortedWalk(removeStaleTemporaries: true)
        var found: [TreeWalker.Found] = []
        while true {
            let next = walk.next(max: 5)
            if next.isEmpty { break }
            found += next
        }
        #expect(found.count == Set(found.map(\.path)).count, "each file once")
        #expect(found.map(\.path) == found.map(\.path).sorted(by: bytewiseLess), "in the index's order")
        #expect(Set(found.map(\.path)) == expected.filter { !$0.hasPrefix("t2/f3/") })
        #expect(Set(found.map(\.path)) == Set(walker.walk().map(\.path)))
        #expect(found.allSatisfy { $0.info.kind == .file && $0.info.size == 2 })
        #expect(!folder.exists("t1/.a.json.docsync-4194305-1.tmp"), "a dead writer's temporary file is removed")
    }

    @Test func aNewFileIsMadeOnlyWhereNoneIs() throws {
        let folder = try TempFolder("create")
        defer { folder.remove() }
        #expect(try FileSystem.replace(folder.file("new.json"), with: bytes("ours"), ifItHolds: nil))
        #expect(try folder.read("new.json") == "ours")
        #expect(try !FileSystem.replace(folder.file("new.json"), with: bytes("again"), ifItHolds: nil))
        #expect(try folder.read("new.json") == "ours")
        try folder.write("from.json", "moved")
        let gate = try PathGate(root: folder.path)
        #expect(try !FileSystem.move(gate.file("from.json"), to: gate.file("new.json")))
        #expect(try folder.read("new.json") == "ours" && folder.exists("from.json"))
        #expect(try FileSystem.move(gate.file("from.json"), to: gate.file("free.json")))
        #expect(try folder.read("free.json") == "moved" && !folder.exists("from.json"))
        #expect(try leftovers(folder).isEmpty)
    }

    /// Files created as a group (a first pull): each where nothing is, the rest reported, not written over.
    @Test func filesCreatedTogetherAreMadeOnlyWhereNoneIs() throws {
        let folder = try TempFolder("create-all")
        defer { folder.remove() }
        try folder.write("taken.json", "theirs")
        let gate = try PathGate(root: folder.path)
        let gone = try gate.file("no-such-folder/two.json", createFolders: true)
        rmdir(folder.file("no-such-folder"))  // removed after it was opened: writing there fails
        let results = FileSystem.createAll([
            (try gate.file("one.json"), bytes("1")), (try gate.file("taken.json"), bytes("ours")),
            (gone, bytes("2")), (try gate.file("three.json"), bytes("3")),
        ])
        #expect(results.map { try? $0.get() } == [true, false, nil, true])
        #expect(try folder.read("one.json") == "1" && folder.read("three.json") == "3")
        #expect(try folder.read("taken.json") == "theirs", "an existing file is left as it is")
        if case .failure(let error) = results[2] { #expect("\(error)".contains("no-such-folder"), "the failure names the file") }
        #expect(try leftovers(folder).isEmpty, "no temp files left behind")
    }

    /// Files created as a group with a modification time of their own carry it, and the stat
    /// handed back (dated or not) is the one on disk after the rename.
    @Test func filesCreatedTogetherCarryTheTimeTheyAreGiven() throws {
        let folder = try TempFolder("create-dated")
        defer { folder.remove() }
        try folder.write("taken.json", "theirs")
        let gate = try PathGate(root: folder.path)
        let time: Int64 = 1_767_323_045_678_000_000  // 2026-01-02T03:04:05.678Z
        let results = FileSystem.createAll([
            (file: try gate.file("dated.json"), bytes: bytes("1"), mtimeNs: time), (file: try gate.file("undated.json"), bytes: bytes("2"), mtimeNs: nil),
            (file: try gate.file("taken.json"), bytes: bytes("ours"), mtimeNs: time),
        ])
        let dated = try results[0].get()
        #expect(dated.created && dated.info?.mtimeNs == time)
        #expect(dated.info == FileSystem.info(folder.file("dated.json")))
        let undated = try results[1].get()
        #expect(undated.created && undated.info == FileSystem.info(folder.file("undated.json")))
        #expect(FileSystem.info(folder.file("undated.json"))!.mtimeNs > time)
        #expect(try results[2].get().created == false)
        #expect(try folder.read("taken.json") == "theirs")
        #expect(try leftovers(folder).isEmpty)
    }

    /// Files created through a staging folder land at their targets, the taken one left as it
    /// is; nothing stays in the staging folder.
    @Test func filesCreatedThroughAStagingFolderLandWhereTheyBelong() throws {
        let folder = try TempFolder("create-staged")
        defer { folder.remove() }
        try folder.write("notes/taken.json", "theirs")
        let gate = try PathGate(root: folder.path)
        let staging = try gate.folder(".state/staging", create: true)
        let results = FileSystem.createAll([
            (file: try gate.file("notes/one.json"), bytes: bytes("1"), mtimeNs: nil),
            (file: try gate.file("notes/taken.json"), bytes: bytes("ours"), mtimeNs: nil),
            (file: try gate.file("other/two.json", createFolders: true), bytes: bytes("2"), mtimeNs: 1_767_323_045_678_000_000),
        ], staging: [staging])
        #expect(results.map { try? $0.get().created } == [true, false, true])
        #expect(try folder.read("notes/one.json") == "1" && folder.read("other/two.json") == "2" && folder.read("notes/taken.json") == "theirs")
        #expect(FileSystem.info(folder.file("other/two.json"))?.mtimeNs == 1_767_323_045_678_000_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file(".state/staging")).isEmpty)
    }

    /// A page written through two staging folders (a thread each): every file lands at its own
    /// target with its own bytes and time, a taken name is left as it is and reported in its
    /// place, and neither staging folder keeps anything.
    @Test func filesCreatedThroughTwoStagingFoldersLandWhereTheyBelong() throws {
        let folder = try TempFolder("create-two-staged")
        defer { folder.remove() }
        try folder.write("notes/n7.json", "theirs")
        let gate = try PathGate(root: folder.path)
        let staging = [try gate.folder(".state/staging", create: true), try gate.folder(".state/staging-2", create: true)]
        let time: Int64 = 1_767_323_045_678_000_000
        let files = try (0..<101).map { i in
            (file: try gate.file("notes/n\(i).json"), bytes: bytes("\(i)"), mtimeNs: i % 2 == 0 ? time + Int64(i) : nil)
        }
        let results = FileSystem.createAll(files, staging: staging)
        #expect(results.count == 101)
        for i in 0..<101 where i != 7 {
            let made = try results[i].get()
            #expect(made.created, "n\(i).json")
            #expect(try folder.read("notes/n\(i).json") == "\(i)")
            #expect(made.info == FileSystem.info(folder.file("notes/n\(i).json")))
            if i % 2 == 0 { #expect(made.info?.mtimeNs == time + Int64(i)) }
        }
        #expect(try results[7].get().created == false)
        #expect(try folder.read("notes/n7.json") == "theirs")
        for path in [".state/staging", ".state/staging-2"] {
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file(path)).isEmpty, "\(path) is left empty")
        }
    }

    /// A target on another file system than the staging folder (here tmpfs beside the tests'
    /// temporary folder, where the two differ: the test is skipped where they do not) is
    /// written beside itself instead.
    @Test(.enabled(if: FileSystemTests.shmIsAnotherFileSystem())) func aFileOnAnotherFileSystemThanTheStagingFolderIsStillCreated() throws {
        let folder = try TempFolder("create-exdev")
        let other = TempFolder(existing: "/dev/shm/docsync-exdev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: other.path, withIntermediateDirectories: true)
        defer { folder.remove(); other.remove() }
        let staging = try PathGate(root: folder.path).folder("staging", create: true)
        let target = try PathGate(root: other.path).file("one.json")
        let results = FileSystem.createAll([(file: target, bytes: bytes("1"), mtimeNs: nil)], staging: [staging])
        #expect(try results[0].get().created)
        #expect(try other.read("one.json") == "1")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("staging")).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: other.path) == ["one.json"])
    }

    static func shmIsAnotherFileSystem() -> Bool {
        var (a, b) = (stat(), stat())
        let base = ProcessInfo.processInfo.environment["DOCSYNC_TEST_TMP"] ?? NSTemporaryDirectory()
        return stat("/dev/shm", &a) == 0 && stat(base, &b) == 0 && a.st_dev != b.st_dev
    }

    @Test func aStatTakenSoonAfterAChangeIsNotTrusted() {
        let now: Int64 = 1_800_000_000_123_456_789
        func recorded(mtime: Int64) -> FileStat {
            FileStat(recording: EntryInfo(kind: .file, size: 10, mtimeNs: mtime, inode: 7, mode: 0o644), readBefore: now)
        }
        #expect(!recorded(mtime: now - 5_000_000).isSettled, "changed 5 ms before it was read: within a tick")
        #expect(!recorded(mtime: now + 60_000_000_000).isSettled, "dated in the future")
        #expect(recorded(mtime: now - 1_000_000_000) == FileStat(size: 10, mtimeNs: now - 1_000_000_000, inode: 7))
        let wholeSecond = (now / 1_000_000_000 - 2) * 1_000_000_000
        #expect(!recorded(mtime: wholeSecond).isSettled, "a file system with whole-second mtimes ticks slower")
        #expect(recorded(mtime: wholeSecond - 5_000_000_000).isSettled)
        #expect(recorded(mtime: now - 5_000_000) != FileStat(size: 10, mtimeNs: now - 5_000_000, inode: 7), "never equal to a stat on disk")
    }

    // MARK: - The path gate (issue 21, finding 2)

    /// A symlink named like a docType (`ln -s ../elsewhere evil`) used to take a pulled document
    /// outside the folder: `makeDirectories` treated it as "not a folder" and ignored EEXIST.
    @Test func theGateRefusesASymlinkedFolderPlantedBefore() throws {
        let folder = try TempFolder("gate")
        let outside = try TempFolder("gate-outside")
        defer { folder.remove(); outside.remove() }
        #expect(symlink(outside.path, folder.file("evil")) == 0)
        let gate = try PathGate(root: folder.path)
        #expect(throws: FileSystemError.self) { try gate.file("evil/planted.json", createFolders: true) }
        #expect(throws: FileSystemError.self) { try gate.file("evil/deeper/planted.json", createFolders: true) }
        #expect(throws: FileSystemError.self) { try gate.file("notes/../../escaped.json", createFolders: true) }
        try folder.write("plain.json", "{}")
        #expect(throws: FileSystemError.self) { try gate.file("plain.json/inside.json", createFolders: true) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing written outside")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/../escaped.json"))
    }

    /// A symlink swapped in after the folder was opened changes nothing: the write lands in the
    /// folder that was checked.
    @Test func aSymlinkPlantedDuringTheOperationIsNotFollowed() throws {
        let folder = try TempFolder("gate-race")
        let outside = try TempFolder("gate-race-outside")
        defer { folder.remove(); outside.remove() }
        let gate = try PathGate(root: folder.path)
        let target = try gate.file("notes/doc.json", createFolders: true)
        #expect(rename(folder.file("notes"), folder.file("notes-moved")) == 0)
        #expect(symlink(outside.path, folder.file("notes")) == 0)
        #expect(try FileSystem.replace(target, with: bytes("{}"), ifItHolds: nil))
        #expect(folder.exists("notes-moved/doc.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing written outside")
        // A symlink at the file's own name is replaced, not written through.
        #expect(symlink(outside.path + "/victim.json", folder.file("notes-moved/link.json")) == 0)
        let link = try target.sibling("link.json")
        #expect(throws: DocumentProblem.self) { try FileSystem.read(link, maxSize: 100) }
        #expect(!FileManager.default.fileExists(atPath: outside.path + "/victim.json"))
    }
}
