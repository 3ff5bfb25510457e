import DocsyncFiles
import DocsyncIndex

extension FileStat {
    /// How long after its mtime a file's stat can be trusted: 50 ms, or 3 s for an mtime on a
    /// whole second (see ``init(recording:readBefore:)``).
    static func racyMargin(mtimeNs: Int64) -> Int64 { mtimeNs % 1_000_000_000 == 0 ? 3_000_000_000 : 50_000_000 }

    /// The stat as it is on disk now, to compare with a recorded one.
    init(_ info: EntryInfo) {
        self.init(size: info.size, mtimeNs: info.mtimeNs, inode: info.inode)
    }

    /// The stat to record for content read (or written) just after `now`: ``unsettled`` if the
    /// file changed too recently for its mtime to tell a change made right after. Kernels before
    /// 6.13 stamp files from a clock that ticks every 1-10 ms, file systems with whole-second
    /// mtimes (FAT, ext3, some NFS servers) every second or two: a same-size save within that
    /// tick would otherwise look unchanged for good. The margin is 50 ms, or 3 s for an mtime on
    /// a whole second; such a file is read again at its next event or rescan (git's "racily
    /// clean" entries, handled the same way).
    init(recording info: EntryInfo, readBefore now: Int64 = FileSystem.realtimeNanoseconds()) {
        let settled = now - info.mtimeNs > Self.racyMargin(mtimeNs: info.mtimeNs)
        self.init(size: info.size, mtimeNs: settled ? info.mtimeNs : FileStat.unsettled, inode: info.inode)
    }
}
