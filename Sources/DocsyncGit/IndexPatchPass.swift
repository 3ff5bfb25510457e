#if canImport(Glibc)
import Glibc
#endif

/// The entries of a version 2 or 3 index that an index patch keeps byte for byte, passed over on
/// the bytes already read. Taking each entry apart (``IndexEntries/next(_:)``, then
/// ``Patch``'s look at it) cost about 190 ns an entry: 19 ms of every trickle commit into a folder
/// of 100,000 files, where all but one or two entries stay as they are.
///
/// An entry is passed over only when the general path would keep it exactly as it is: its name
/// ends where its flags say with nothing else on its way (git's layout; anything else the general
/// path reads and judges), it is at stage 0 without extended flags, the filter rules it out of
/// the changes, it lies before the next path to add and is no folder of it, and it is not racily
/// clean against the old index. At the first entry that is not, the pass stops and the general
/// path takes that one.
struct PlainRun {
    let hashSize: Int
    let filter: PathFilter
    /// The next path to add, if any.
    let nextAdded: [UInt8]?
    /// The old index's time in seconds (``Patch``'s racy-git rule).
    let indexSeconds: UInt32

    typealias Field = IndexEntries.Field

    /// From `start` in `bytes`, the end of the run of entries kept as they are (at most
    /// `limit`, all of them whole within `bytes`), and how many there were.
    func pass(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, limit: Int) -> (end: Int, count: Int) {
        let flagsAt = Field.hash + hashSize
        let nameStart = flagsAt + 2
        var at = start
        var count = 0
        while count < limit, at + nameStart <= bytes.count {
            let flags = Self.u16(bytes, at + flagsAt)
            let length = Int(flags & 0xfff)
            let size = (nameStart + length + 8) & ~7
            guard flags & 0x7000 == 0, length < 0xfff, at + size <= bytes.count, bytes[at + nameStart + length] == 0 else { break }
            let name = UnsafeBufferPointer(rebasing: bytes[(at + nameStart)..<(at + nameStart + length)])
            guard memchr(name.baseAddress!, 0, length) == nil, !filter.mayHold(name), before(name) else { break }
            let mode = Self.u32(bytes, at + Field.mode)
            if mode & 0o170000 != 0o160000, indexSeconds <= Self.u32(bytes, at + Field.mtimeSeconds), Self.u32(bytes, at + Field.size) != 0 { break }
            at += size
            count += 1
        }
        return (at, count)
    }

    /// Whether `name` sorts before the next path to add and is not its start (a name that is
    /// the start of it may be a folder the path lies under).
    private func before(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let next = nextAdded, !next.isEmpty else { return nextAdded == nil }
        let compared = next.withUnsafeBufferPointer { memcmp(name.baseAddress!, $0.baseAddress!, min(name.count, $0.count)) }
        return compared < 0
    }

    private static func u16(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt16 {
        UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    private static func u32(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}
