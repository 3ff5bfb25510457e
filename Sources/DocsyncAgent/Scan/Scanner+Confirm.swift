import DocsyncFiles
import DocsyncIndex
import DocsyncModel

/// Confirming what the index recorded moments ago: a file whose row was written with an
/// unsettled stat (a pulled file, an id written in, a save read within its mtime's tick) is read
/// once more when it is old enough. When its bytes are the ones recorded, only the stat changes:
/// nothing about the document can have, so the read skips parsing, the wire form, the chunk's
/// document rows and the outbox, which a pull of 100,000 files otherwise paid once more per file.
///
/// Confirming needs no tree lock: the stat is written only where the row still holds the hash
/// that was read, under an unsettled stat, so a pulled write or a scan that recorded the file
/// meanwhile wins, and the file is judged (under the lock) instead.
extension Scanner {
    /// A file that may hold what its row recorded, and the row.
    struct Recorded: Sendable {
        let seen: Seen
        let row: FileRow
    }

    /// Splits `seen` into files that may hold what `known` recorded for them (to confirm) and the
    /// rest (to judge).
    static func split(_ seen: [Seen], known: [String: FileRow]) -> (recorded: [Recorded], rest: [Seen]) {
        var recorded: [Recorded] = []
        var rest: [Seen] = []
        for s in seen {
            if let row = known[s.path], mayConfirm(s, row) { recorded.append(Recorded(seen: s, row: row)) } else { rest.append(s) }
        }
        return (recorded, rest)
    }

    /// Whether the file may hold what its row recorded: a document's file, recorded ok with an
    /// unsettled stat, of the size and inode on disk. Forced looks (an attached file changed) and
    /// anything else are judged.
    static func mayConfirm(_ s: Seen, _ row: FileRow) -> Bool {
        !s.force && s.nameIsUTF8 && row.state == .ok && row.error == nil && row.docID != nil && row.hash != nil
            && !row.stat.isSettled && row.stat.size == s.info.size && row.stat.inode == s.info.inode
    }

    /// Reads each of `recorded`; where the bytes are the recorded ones, writes the settled stat
    /// (or leaves the row for the settler while the file is still within its mtime's tick).
    /// Returns the files to judge: changed, unreadable, or recorded anew meanwhile.
    func confirmRecorded(_ recorded: [Recorded]) async throws -> [Seen] {
        // Attached files are reconciled by judging, which looks at the document's members.
        guard !recorded.isEmpty, try await !index.read({ try $0.hasUploads() }) else { return recorded.map(\.seen) }
        var rest: [Seen] = []
        for start in stride(from: 0, to: recorded.count, by: Self.chunkSize) {
            let chunk = recorded[start..<min(start + Self.chunkSize, recorded.count)]
            let middle = chunk.startIndex + chunk.count / 2
            // Two halves at once, as for reading to judge.
            async let first = chunk[..<middle].map(readAgain)
            let second = chunk[middle...].map(readAgain)
            let outcomes = await first + second
            let settled = outcomes.compactMap(\.settled)
            let overtaken = Set(try await index.write { tx in
                try settled.filter { try !tx.settleFile(at: $0.path, hash: $0.hash, stat: $0.stat) }.map(\.path)
            })
            for (outcome, r) in zip(outcomes, chunk) where !outcome.same || overtaken.contains(r.seen.path) { rest.append(r.seen) }
        }
        return rest
    }

    /// What one read found: whether the bytes are the recorded ones, and the stat to record then
    /// (nil while the file is still within its mtime's tick: the settler reads it again).
    struct Reread {
        var same = false
        var settled: (path: String, hash: String, stat: FileStat)?
    }

    private func readAgain(_ r: Recorded) -> Reread {
        let readStart = FileSystem.realtimeNanoseconds()
        guard let (bytes, info) = try? FileSystem.read(walker.absolute(r.seen.path), maxSize: maxFileSize), let hash = r.row.hash,
              info.size == r.row.stat.size, info.inode == r.row.stat.inode, ContentHash.sha256Hex(bytes) == hash
        else { return Reread() }
        let stat = FileStat(recording: info, readBefore: readStart)
        return Reread(same: true, settled: stat.isSettled ? (r.seen.path, hash, stat) : nil)
    }

    /// Confirms `recorded` (no tree lock needed), then judges what a confirmation sent back and
    /// `rest` as a scan does, inside `locked`: the caller's tree lock, or (the default, for a
    /// caller that holds it already) the work run as it is. A confirmed file counts as unchanged.
    func confirmThenJudge(
        _ recorded: [Recorded], rest: [Seen] = [],
        locked: @Sendable (@Sendable () async throws -> ScanSummary) async throws -> ScanSummary = { try await $0() }
    ) async throws -> ScanSummary {
        let sentBack = try await confirmRecorded(recorded) + rest
        var summary = ScanSummary()
        summary.unchanged = recorded.count + rest.count - sentBack.count
        // A file gone by now is the watcher's to report, with its path (a deletion, or one half
        // of a move): judged as seen, its failed read would leave an `invalid` row for a file
        // that is not there, which no event would ever correct.
        let toJudge = sentBack.filter { FileSystem.info(walker.absolute($0.path)) != nil }
        guard !toJudge.isEmpty else { return summary }
        let scanner = self
        summary.add(try await locked {
            var judged = ScanSummary()
            try await scanner.apply(seen: toJudge, vanished: [], summary: &judged)
            return judged
        })
        return summary
    }
}
