import DocsyncModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The stage-0 entries of some paths, read by the agent from a git index file (its versions 2,
/// 3 and 4), where `git ls-files` would read and check the whole of it in a process of its own:
/// 16 ms of each trickle commit into a folder of 100,000 files, for one path.
///
/// Read-only, 64 KiB at a time (an index of 100,000 entries is 8 MB), and only what this reader
/// knows for certain: a split index (its entries are in a second file), a sparse one (a folder can
/// stand for its files), another version, or anything that does not read as git writes it gives
/// `nil`, and the caller asks `ls-files`. The index's checksum is not checked here: the
/// `update-index` that follows reads the same file and checks it.
enum GitIndexFile {
    /// `mode sha` by path, for the stage-0 entries among `paths`, in the index at `file`, whose
    /// hashes are `hashSize` bytes; `nil` when this reader leaves the index to git.
    static func entries(of paths: Set<String>, in file: String, hashSize: Int) -> [String: String]? {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var reader = DescriptorReader(fd: fd, longest: longest)
        var parser = Parser(paths: paths, hashSize: hashSize)
        return parser.run(&reader) ? parser.found : nil
    }

    /// An entry or header longer than this is not one git wrote.
    static let longest = 1 << 20
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

extension GitIndexFile {
    /// The index's header, entries and extensions, read in order, the asked-for entries kept.
    struct Parser {
        let hashSize: Int
        /// The paths asked for, as bytes.
        private let wanted: Set<[UInt8]>
        /// A bit for each asked-for path's ``fingerprint(_:)``: most entries are passed over on
        /// one bit, without copying or hashing their path (an index of 100,000 entries, one path
        /// asked for).
        private var filter: [UInt64]
        private(set) var found: [String: String] = [:]
        private var version: UInt32 = 0
        /// The last entry's path: version 4 names an entry by what it keeps of it.
        private var previous: [UInt8] = []

        init(paths: Set<String>, hashSize: Int) {
            self.hashSize = hashSize
            wanted = Set(paths.map { Array($0.utf8) })
            filter = [UInt64](repeating: 0, count: max(1, (paths.count * 64).nextPowerOf2 / 64))
            for bytes in wanted {
                let bit = Self.fingerprint(bytes[...]) & (filter.count * 64 - 1)
                filter[bit >> 6] |= 1 << UInt64(bit & 63)
            }
        }

        /// Whether `path` may be one asked for.
        private func mayBeWanted(_ path: ArraySlice<UInt8>) -> Bool {
            let bit = Self.fingerprint(path) & (filter.count * 64 - 1)
            return filter[bit >> 6] & (1 << UInt64(bit & 63)) != 0
        }

        /// A cheap mix of a path's length and its last eight bytes.
        private static func fingerprint(_ path: ArraySlice<UInt8>) -> Int {
            var tail: UInt64 = 0
            for byte in path.suffix(8) { tail = tail << 8 | UInt64(byte) }
            let mixed = (tail ^ UInt64(path.count)) &* 0x9E37_79B9_7F4A_7C15
            return Int(truncatingIfNeeded: mixed >> 32)
        }

        /// `false` when the index is not one this reader reads (see ``GitIndexFile``).
        mutating func run(_ r: inout DescriptorReader) -> Bool {
            guard r.need(12), r.bytes[r.at..<(r.at + 4)].elementsEqual("DIRC".utf8) else { return false }
            version = r.u32(4)
            let count = r.u32(8)
            guard (2...4).contains(version) else { return false }
            r.at += 12
            for _ in 0..<count {
                guard entry(&r) else { return false }
            }
            return extensions(&r)
        }

        /// One entry: 40 bytes of `stat`, the hash, 16 bits of flags (and 16 more where the
        /// extended flag says so), the path; in versions 2 and 3 padded with NULs to 8 bytes.
        private mutating func entry(_ r: inout DescriptorReader) -> Bool {
            let fixed = 40 + hashSize + 2
            guard r.need(fixed) else { return false }
            let flags = r.u16(40 + hashSize)
            let extended = flags & 0x4000 != 0
            guard !extended || version >= 3 else { return false }
            let nameStart = fixed + (extended ? 2 : 0)
            let size: Int
            let name: ArraySlice<UInt8>
            if version == 4 {
                guard let (strip, length) = Self.varint(&r, at: nameStart), strip <= previous.count,
                    let end = Self.nul(&r, from: nameStart + length)
                else { return false }
                previous.removeLast(strip)
                previous.append(contentsOf: r.bytes[(r.at + nameStart + length)..<(r.at + end)])
                size = end + 1
                name = previous[...]
            } else {
                guard let end = Self.nul(&r, from: nameStart) else { return false }
                size = (end + 8) & ~7
                guard r.need(size) else { return false }
                // Taken once the bytes are all there: reading more would copy them under a slice.
                name = r.bytes[(r.at + nameStart)..<(r.at + end)]
            }
            let named = Int(flags & 0xfff)
            guard named == 0xfff ? name.count >= 0xfff : named == name.count else { return false }
            if flags & 0x3000 == 0, mayBeWanted(name), wanted.contains(Array(name)) {
                let mode = String(r.u32(24), radix: 8)
                found[String(decoding: name, as: UTF8.self)] = String(repeating: "0", count: max(0, 6 - mode.count)) + mode + " "
                    + Hex.encode(r.bytes[(r.at + 40)..<(r.at + 40 + hashSize)])
            }
            r.at += size
            return true
        }

        /// The extensions, up to the index's own hash at its end. One whose name does not start
        /// with a capital is one git must understand to read the entries (a split index's `link`,
        /// a sparse index's `sdir`): the index is left to git.
        private func extensions(_ r: inout DescriptorReader) -> Bool {
            while r.need(hashSize + 1) {
                guard r.need(8), (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(r.bytes[r.at]) else { return false }
                var left = 8 + Int(r.u32(4))
                while left > 0 {
                    guard r.available > 0 || r.more() else { return false }
                    let step = min(left, r.available)
                    r.at += step
                    left -= step
                }
            }
            return r.available == hashSize
        }

        /// The offset of the NUL that ends a name starting at `offset` (from `r.at`).
        private static func nul(_ r: inout DescriptorReader, from offset: Int) -> Int? {
            guard r.need(offset) else { return nil }
            var searched = offset
            while true {
                if let at = r.bytes[(r.at + searched)...].firstIndex(of: 0) { return at - r.at }
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
}

extension Int {
    /// The least power of two at least this (1 for 0 and below).
    fileprivate var nextPowerOf2: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
