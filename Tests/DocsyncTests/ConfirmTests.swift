@testable import DocsyncAgent
import DocsyncClock
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import DocsyncWatcher
import Foundation
import Testing

/// A file the index recorded moments ago (unsettled: a pulled file, say) is read once more; when
/// it holds what was recorded, only its stat is settled, and nothing is judged or queued.
@Suite struct ConfirmTests {
    static let text = #"{"id":"n1","docType":"note","v":"aaaa"}"#

    /// A folder holding `note/n.json` with `text`, dated an hour ago (so a read now settles it),
    /// and an index recording it with an unsettled stat and `recordedText`'s hash.
    func recorded(_ name: String, recordedText: String = text) throws -> (TempFolder, DocsyncAgent.Scanner) {
        let folder = try TempFolder(name)
        try folder.write("note/n.json", Self.text)
        let past = timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)
        _ = [past, past].withUnsafeBufferPointer { utimensat(AT_FDCWD, folder.file("note/n.json"), $0.baseAddress, 0) }
        let info = try #require(FileSystem.info(folder.file("note/n.json")))
        let index = try Index.open(root: folder.path)
        try index.writeSync { tx in
            try tx.upsertFile(FileRow(
                path: "note/n.json", docID: "n1", docType: "note", hash: ContentHash.sha256Hex(Array(recordedText.utf8)),
                stat: FileStat(size: info.size, mtimeNs: FileStat.unsettled, inode: info.inode), state: .ok, error: nil))
        }
        let scanner = DocsyncAgent.Scanner(try FolderContext.forTests(folder.path, index: index), maxFileSize: 1 << 20)
        return (folder, scanner)
    }

    func row(_ scanner: DocsyncAgent.Scanner) throws -> FileRow? {
        try scanner.index.readSync { try $0.file(at: "note/n.json") }
    }

    @Test func aFileHoldingWhatWasRecordedHasItsStatSettledAndNothingQueued() async throws {
        let (folder, scanner) = try recorded("confirm-same")
        defer { folder.remove() }
        let summary = try await scanner.scan(ChangeBatch(paths: ["note/n.json"]))
        #expect(summary.unchanged == 1)
        #expect(summary.read == 0, "confirmed, not judged")
        #expect(summary.queued == 0)
        let info = try #require(FileSystem.info(folder.file("note/n.json")))
        #expect(try row(scanner)?.stat == FileStat(size: info.size, mtimeNs: info.mtimeNs, inode: info.inode))
        #expect(try scanner.index.readSync { try $0.outboxEntry(key: .document("n1")) } == nil)
    }

    /// The same size and inode, other bytes: the file is judged, and its document queued.
    @Test func aFileOfTheSameSizeHoldingOtherBytesIsJudged() async throws {
        let (folder, scanner) = try recorded("confirm-other", recordedText: Self.text.replacingOccurrences(of: "aaaa", with: "bbbb"))
        defer { folder.remove() }
        let summary = try await scanner.scan(ChangeBatch(paths: ["note/n.json"]))
        #expect(summary.read == 1)
        #expect(summary.queued == 1)
        #expect(try row(scanner)?.hash == ContentHash.sha256Hex(Array(Self.text.utf8)))
        #expect(try scanner.index.readSync { try $0.outboxEntry(key: .document("n1")) } != nil)
    }

    /// Confirming takes no tree lock: a row recorded anew between the look and the stat's write
    /// (a pulled version written meanwhile) is kept, and the file goes to be judged.
    @Test func aRowRecordedAnewMeanwhileIsNotOverwritten() async throws {
        let (folder, scanner) = try recorded("confirm-overtaken")
        defer { folder.remove() }
        let looked = try #require(try row(scanner))
        let info = try #require(FileSystem.info(folder.file("note/n.json")))
        var anew = looked
        anew.hash = ContentHash.sha256Hex(Array("a version pulled meanwhile".utf8))
        try scanner.index.writeSync { tx in try tx.upsertFile(anew) }
        let seen = DocsyncAgent.Scanner.Seen(path: "note/n.json", info: info, nameIsUTF8: true, force: false)
        let toJudge = try await scanner.confirmRecorded([DocsyncAgent.Scanner.Recorded(seen: seen, row: looked)])
        #expect(toJudge.map(\.path) == ["note/n.json"])
        #expect(try row(scanner) == anew, "the newer record stands, unsettled")
    }

    /// A file dated in the future (another machine's clock) cannot be settled by a read: it is
    /// confirmed, and its row stays unsettled, for the next look to read again.
    @Test func aFileDatedInTheFutureStaysUnsettled() async throws {
        let (folder, scanner) = try recorded("confirm-future")
        defer { folder.remove() }
        let future = timespec(tv_sec: time(nil) + 3600, tv_nsec: 0)
        _ = [future, future].withUnsafeBufferPointer { utimensat(AT_FDCWD, folder.file("note/n.json"), $0.baseAddress, 0) }
        let summary = try await scanner.scan(ChangeBatch(paths: ["note/n.json"]))
        #expect(summary.unchanged == 1)
        #expect(summary.queued == 0)
        #expect(try row(scanner)?.stat.isSettled == false)
    }

    /// A file removed between the settler's look and its read leaves no row claiming a file
    /// there: its removal is the watcher's to report (which it does with the path). An
    /// `invalid` row for a path with no file would never be corrected by an event, and would
    /// hold back a pulled document that needs the path.
    @Test func aFileRemovedBeforeItIsReadAgainLeavesNoRowForAFileThatIsNotThere() async throws {
        let (folder, scanner) = try recorded("confirm-gone")
        defer { folder.remove() }
        let (recorded, rest) = try await scanner.lookAgain(["note/n.json"], readyBefore: FileSystem.realtimeNanoseconds())
        #expect(recorded.count == 1 && rest.isEmpty)
        try FileManager.default.removeItem(atPath: folder.file("note/n.json"))
        _ = try await scanner.confirmThenJudge(recorded)
        let row = try row(scanner)
        #expect(row?.state != .invalid, "\(String(describing: row))")
    }
}
