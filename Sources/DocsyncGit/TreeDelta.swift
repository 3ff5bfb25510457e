#if canImport(Glibc)
import Glibc
#endif

/// A git delta (the instructions a pack stores in place of an object: copy this range of a base
/// object, insert these bytes) that makes one tree from another, found by walking both trees'
/// entries side by side in git's order: a run of entries the two share is one copy, an entry
/// only the target has is inserted. Two versions of a folder's tree that a trickle's commits
/// made differ by an entry or two: their delta is a few dozen bytes, where git's own packing
/// (`pack-objects`) searches each tree of 100,000 entries against ten others for one, about
/// 80 ms a tree. Both trees are read as their loose objects come, 64 KiB at a time.
enum TreeDelta {
    /// The most a copy instruction takes at once: 64 KiB, as git's own delta writer does (its
    /// format allows 16 MiB, and a smaller copy is read by every git).
    static let copyPiece = 0x10000

    /// The delta that makes `target` from `base` (both trees, read from their start), or `nil`
    /// when it would be longer than `limit` bytes: the target is then better stored whole.
    static func make(target: LooseObjectReader, base: LooseObjectReader, hashSize: Int, limit: Int) throws(GitError) -> [UInt8]? {
        guard target.kind == "tree", base.kind == "tree" else { throw GitError("a delta of trees was asked for another kind of object") }
        // A copy's offset has four bytes.
        guard base.size < 1 << 32 else { return nil }
        var writer = Writer(limit: limit)
        writer.size(base.size)
        writer.size(target.size)
        let old = Side(base, hashSize: hashSize)
        let new = Side(target, hashSize: hashSize)
        var oldEntry = try old.entry()
        while let entry = try new.entry() {
            // Most entries are the same in both, at the same place in their runs: one comparison.
            var same = oldEntry.map { old.same($0, as: entry, in: new) } ?? false
            if !same && oldEntry != nil {
                // Entries of the base that sort before this one are not in the target.
                while oldEntry != nil, new.order(against: old) > 0 { oldEntry = try old.next() }
                same = oldEntry.map { old.same($0, as: entry, in: new) } ?? false
            }
            if same, let at = oldEntry {
                writer.copy(from: old.offset(of: at), count: entry.count)
                oldEntry = try old.next()
            } else {
                writer.insert(new.bytes(entry))
                // The base's entry of this name, changed: passed.
                if oldEntry != nil && new.order(against: old) == 0 { oldEntry = try old.next() }
                guard !writer.tooLong else { return nil }
            }
            _ = try new.next()
        }
        // The base is read to its end, so that a damaged or mis-sized object is found.
        while oldEntry != nil { oldEntry = try old.next() }
        writer.flush()
        return writer.tooLong ? nil : writer.bytes
    }

    /// One tree's entries as its object is read: the entry at hand (``entry()``) as a range of
    /// the bytes held, in a buffer of a fixed place compared with `memcmp`, and where in the tree
    /// each starts. An entry is `<mode> SP <name> NUL <hash>`.
    private final class Side {
        private let reader: LooseObjectReader
        private let hashSize: Int
        private var buffer: UnsafeMutablePointer<UInt8>
        private var capacity = 256 << 10
        private var count = 0
        /// Where the entry at hand starts in the buffer, and the tree's offset of the buffer's start.
        private var at = 0
        private var held = 0
        /// The entry at hand: its bytes and where its name ends (a range of the buffer).
        private var current: (range: Range<Int>, nul: Int)?
        /// A longer entry is not a name and a hash: the tree is broken.
        private static let longest = 1 << 20
        /// The least room a read is given.
        private static let piece = 64 << 10

        init(_ reader: LooseObjectReader, hashSize: Int) {
            self.reader = reader
            self.hashSize = hashSize
            buffer = .allocate(capacity: capacity)
        }

        deinit { buffer.deallocate() }

        /// The entry at hand, `nil` at the tree's end.
        func entry() throws(GitError) -> Range<Int>? {
            if let current { return current.range }
            while true {
                if let found = parse() {
                    current = found
                    return found.range
                }
                guard try fill() else {
                    guard at == count else { throw GitError("a tree the agent wrote cannot be read") }
                    return nil
                }
            }
        }

        /// Past the entry at hand: the next one.
        func next() throws(GitError) -> Range<Int>? {
            if let current { at = current.range.upperBound }
            current = nil
            return try entry()
        }

        func offset(of entry: Range<Int>) -> Int { held + entry.lowerBound }

        func bytes(_ entry: Range<Int>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: buffer + entry.lowerBound, count: entry.count)
        }

        /// Whether `entry` here holds the same bytes as `other`'s entry at hand.
        func same(_ entry: Range<Int>, as other: Range<Int>, in side: Side) -> Bool {
            entry.count == other.count && memcmp(buffer + entry.lowerBound, side.buffer + other.lowerBound, entry.count) == 0
        }

        /// Git's order of this side's entry at hand and `side`'s (``GitTree/order(_:_:_:_:)``).
        func order(against side: Side) -> Int {
            guard let mine = current, let theirs = side.current else { return 0 }
            return GitTree.order(name(mine), isFolder(mine), side.name(theirs), side.isFolder(theirs))
        }

        private func name(_ entry: (range: Range<Int>, nul: Int)) -> UnsafeBufferPointer<UInt8> {
            let space = UnsafeBufferPointer(start: buffer + entry.range.lowerBound, count: entry.nul - entry.range.lowerBound).firstIndex(of: 0x20) ?? 0
            return UnsafeBufferPointer(start: buffer + entry.range.lowerBound + space + 1, count: entry.nul - entry.range.lowerBound - space - 1)
        }

        private func isFolder(_ entry: (range: Range<Int>, nul: Int)) -> Bool {
            buffer[entry.range.lowerBound] == UInt8(ascii: "4")
        }

        /// The entry starting at ``at``, when the buffer holds all of it.
        private func parse() -> (range: Range<Int>, nul: Int)? {
            guard at < count, let found = memchr(buffer + at, 0, count - at) else { return nil }
            let nul = buffer.distance(to: found.assumingMemoryBound(to: UInt8.self))
            guard nul + 1 + hashSize <= count else { return nil }
            return (at..<(nul + 1 + hashSize), nul)
        }

        /// The object's next bytes read into the buffer, the entries before ``at`` let go first;
        /// false at the object's end.
        private func fill() throws(GitError) -> Bool {
            if at > 0 {
                memmove(buffer, buffer + at, count - at)
                held += at
                count -= at
                at = 0
            }
            guard count <= Self.longest else { throw GitError("a tree the agent wrote cannot be read") }
            if capacity - count < Self.piece {
                let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
                larger.update(from: buffer, count: count)
                buffer.deallocate()
                buffer = larger
                capacity *= 2
            }
            let n = try reader.read(into: UnsafeMutableBufferPointer(start: buffer + count, count: capacity - count))
            count += n
            return n > 0
        }
    }

    /// A delta's bytes as they are made: copies of adjacent ranges joined into one, inserted
    /// bytes gathered into instructions of up to 127.
    private struct Writer {
        let limit: Int
        private(set) var bytes: [UInt8] = []
        private var copying: (from: Int, count: Int)?
        private var inserting: [UInt8] = []
        var tooLong: Bool { bytes.count + inserting.count > limit }

        init(limit: Int) {
            self.limit = limit
        }

        /// A size in the delta's header: seven bits a byte, the lowest first.
        mutating func size(_ value: Int) {
            var rest = value
            repeat {
                bytes.append(UInt8(rest & 0x7f) | (rest >> 7 > 0 ? 0x80 : 0))
                rest >>= 7
            } while rest > 0
        }

        mutating func copy(from offset: Int, count: Int) {
            if let run = copying, run.from + run.count == offset {
                copying = (run.from, run.count + count)
                return
            }
            flush()
            copying = (offset, count)
        }

        mutating func insert(_ piece: UnsafeBufferPointer<UInt8>) {
            flushCopy()
            inserting.append(contentsOf: piece)
        }

        mutating func flush() {
            flushCopy()
            flushInsert()
        }

        private mutating func flushCopy() {
            guard let run = copying else { return }
            copying = nil
            flushInsert()
            var (from, left) = run
            while left > 0 {
                let count = min(left, TreeDelta.copyPiece)
                encodeCopy(from: from, count: count)
                from += count
                left -= count
            }
        }

        /// A copy instruction: a flag for each byte of the offset and of the size that is not
        /// zero, then those bytes, the lowest first (a size of 64 KiB is written as none).
        private mutating func encodeCopy(from offset: Int, count: Int) {
            var op: UInt8 = 0x80
            var fields: [UInt8] = []
            for i in 0..<4 where (offset >> (8 * i)) & 0xff != 0 {
                op |= 1 << i
                fields.append(UInt8((offset >> (8 * i)) & 0xff))
            }
            let size = count == TreeDelta.copyPiece ? 0 : count
            for i in 0..<3 where (size >> (8 * i)) & 0xff != 0 {
                op |= 0x10 << i
                fields.append(UInt8((size >> (8 * i)) & 0xff))
            }
            bytes.append(op)
            bytes.append(contentsOf: fields)
        }

        private mutating func flushInsert() {
            var rest = inserting[...]
            while !rest.isEmpty {
                let part = rest.prefix(127)
                bytes.append(UInt8(part.count))
                bytes.append(contentsOf: part)
                rest = rest.dropFirst(part.count)
            }
            inserting.removeAll(keepingCapacity: true)
        }
    }
}
