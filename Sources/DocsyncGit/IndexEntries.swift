#if canImport(Glibc)
import Glibc
#endif

/// A git index's entries read in order as the bytes come (versions 2, 3 and 4): what each
/// entry's bytes are and the path it names. Shared by the reader of a few entries
/// (``GitIndexFile``) and the writer of the user's next index (``IndexPatch``).
///
/// Only what git writes is read: another version, an entry longer than
/// ``GitIndexFile/longest``, a name whose length the flags do not give, or extended flags in
/// version 2 give `nil`, and the caller leaves the index to git.
struct IndexEntries {
    let hashSize: Int
    let version: UInt32
    /// Entries the header counts.
    let count: UInt32
    /// The last entry's path: version 4 names an entry by what it keeps of it.
    private var previous: [UInt8] = []

    /// The header (`DIRC`, version, count), taken from `r`.
    init?(_ r: inout DescriptorReader, hashSize: Int) {
        guard r.need(12), r.bytes[r.at..<(r.at + 4)].elementsEqual("DIRC".utf8) else { return nil }
        version = r.u32(4)
        count = r.u32(8)
        guard (2...4).contains(version) else { return nil }
        self.hashSize = hashSize
        r.at += 12
    }

    /// Where an entry's fields lie from its start.
    enum Field {
        static let mtimeSeconds = 8
        static let mode = 24
        static let size = 36
        /// The hash follows the 40 bytes of `stat`; the flags follow the hash.
        static let hash = 40
    }

    /// The entry at `r.at`: its length in bytes (padding included), its flags and its path. Not
    /// taken: the caller moves `r.at` on once done with the bytes. The path is valid until the
    /// next call (a slice of `r`'s bytes, or of the path version 4 rebuilt).
    mutating func next(_ r: inout DescriptorReader) -> (size: Int, flags: UInt16, path: ArraySlice<UInt8>)? {
        let fixed = Field.hash + hashSize + 2
        guard r.need(fixed) else { return nil }
        let flags = r.u16(Field.hash + hashSize)
        let extended = flags & 0x4000 != 0
        guard !extended || version >= 3 else { return nil }
        let nameStart = fixed + (extended ? 2 : 0)
        let size: Int
        let name: ArraySlice<UInt8>
        if version == 4 {
            guard let (strip, length) = Self.varint(&r, at: nameStart), strip <= previous.count,
                let end = Self.nul(&r, from: nameStart + length)
            else { return nil }
            previous.removeLast(strip)
            previous.append(contentsOf: r.bytes[(r.at + nameStart + length)..<(r.at + end)])
            size = end + 1
            name = previous[...]
        } else {
            guard let end = Self.nul(&r, from: nameStart) else { return nil }
            size = (end + 8) & ~7
            guard r.need(size) else { return nil }
            // Taken once the bytes are all there: reading more would copy them under a slice.
            name = r.bytes[(r.at + nameStart)..<(r.at + end)]
        }
        let named = Int(flags & 0xfff)
        guard named == 0xfff ? name.count >= 0xfff : named == name.count else { return nil }
        return (size, flags, name)
    }

    /// The offset of the NUL that ends a name starting at `offset` (from `r.at`).
    private static func nul(_ r: inout DescriptorReader, from offset: Int) -> Int? {
        guard r.need(offset) else { return nil }
        var searched = offset
        while true {
            // memchr: a name is looked through for its end at every entry of the index.
            let from = r.at + searched
            let found = r.bytes.withUnsafeBufferPointer { all -> Int? in
                guard from < all.count, let hit = memchr(all.baseAddress! + from, 0, all.count - from) else { return nil }
                return all.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            }
            if let at = found { return at - r.at }
            searched = r.available
            guard r.more() else { return nil }
        }
    }

    /// Version 4's count of bytes the path drops from the last one's end (git's `varint`:
    /// seven bits a byte, the high bit saying another follows, each step adding one), and
    /// the bytes it took.
    private static func varint(_ r: inout DescriptorReader, at offset: Int) -> (Int, Int)? {
        var at = offset
        guard r.need(at + 1) else { return nil }
        var byte = r.bytes[r.at + at]
        var value = Int(byte & 0x7f)
        while byte & 0x80 != 0 {
            at += 1
            guard r.need(at + 1), value < 1 << 40 else { return nil }
            byte = r.bytes[r.at + at]
            value = ((value + 1) << 7) | Int(byte & 0x7f)
        }
        return (value, at + 1 - offset)
    }
}

extension DescriptorReader {
    /// The big-endian numbers of an index, at `offset` from what is not yet taken.
    func u32(_ offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[at + offset + $1]) }
    }

    func u16(_ offset: Int) -> UInt16 {
        UInt16(bytes[at + offset]) << 8 | UInt16(bytes[at + offset + 1])
    }
}

/// A bit for each of some paths' fingerprints: most entries of an index are passed over on one
/// bit, without copying or hashing their path (an index of 100,000 entries, one path asked for).
/// At least 4,096 bits (512 bytes), 64 a path: an entry not asked for is taken for one about
/// once in 4,096 for one path asked for (each such entry is looked at whole).
struct PathFilter {
    private var bits: [UInt64]

    init(_ paths: some Collection<[UInt8]>) {
        bits = [UInt64](repeating: 0, count: max(64, (paths.count * 64).nextPowerOf2 / 64))
        for path in paths {
            let bit = Self.fingerprint(path[...]) & (bits.count * 64 - 1)
            bits[bit >> 6] |= 1 << UInt64(bit & 63)
        }
    }

    /// Whether `path` may be one of the paths.
    func mayHold(_ path: some BidirectionalCollection<UInt8>) -> Bool {
        let bit = Self.fingerprint(path) & (bits.count * 64 - 1)
        return bits[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    /// A cheap mix of a path's length and its last sixteen bytes (FNV-1a), each bit of them then
    /// reaching every bit of the result (MurmurHash3's finaliser): the filter takes the low bits,
    /// and generated names (`r00417.json`, `r00418.json`) differ only in a few bytes of the tail.
    private static func fingerprint(_ path: some BidirectionalCollection<UInt8>) -> Int {
        var mixed = UInt64(path.count) &* 0x9E37_79B9_7F4A_7C15
        for byte in path.suffix(16) { mixed = (mixed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        mixed ^= mixed >> 33
        mixed &*= 0xFF51_AFD7_ED55_8CCD
        mixed ^= mixed >> 33
        mixed &*= 0xC4CE_B9FE_1A85_EC53
        mixed ^= mixed >> 33
        return Int(truncatingIfNeeded: mixed)
    }
}

extension Int {
    /// The least power of two at least this (1 for 0 and below).
    fileprivate var nextPowerOf2: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
