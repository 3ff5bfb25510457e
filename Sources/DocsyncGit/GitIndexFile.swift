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
/// `nil`, and the caller asks `ls-files`. The index's checksum is not checked here: what writes
/// the next index from it (``IndexPatch`` or `update-index`) checks it.
enum GitIndexFile {
    /// `mode sha` by path, for the stage-0 entries among `paths`, in the index at `file`, whose
    /// hashes are `hashSize` bytes; `nil` when this reader leaves the index to git.
    static func entries(of paths: Set<String>, in file: String, hashSize: Int) -> [String: String]? {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var reader = DescriptorReader(fd: fd, longest: longest)
        guard var entries = IndexEntries(&reader, hashSize: hashSize) else { return nil }
        let wanted = Set(paths.map { Array($0.utf8) })
        let filter = PathFilter(wanted)
        var found: [String: String] = [:]
        for _ in 0..<entries.count {
            guard let (size, flags, name) = entries.next(&reader) else { return nil }
            if flags & 0x3000 == 0, filter.mayHold(name), wanted.contains(Array(name)) {
                let mode = String(reader.u32(IndexEntries.Field.mode), radix: 8)
                let hash = IndexEntries.Field.hash
                found[String(decoding: name, as: UTF8.self)] = String(repeating: "0", count: max(0, 6 - mode.count)) + mode + " "
                    + Hex.encode(reader.bytes[(reader.at + hash)..<(reader.at + hash + hashSize)])
            }
            reader.at += size
        }
        return skipExtensions(&reader, hashSize: hashSize) ? found : nil
    }

    /// An entry or header longer than this is not one git wrote.
    static let longest = 1 << 20

    /// The extensions, up to the index's own hash at its end. One whose name does not start
    /// with a capital is one git must understand to read the entries (a split index's `link`,
    /// a sparse index's `sdir`): the index is left to git.
    private static func skipExtensions(_ r: inout DescriptorReader, hashSize: Int) -> Bool {
        while r.need(hashSize + 1) {
            guard r.need(8), (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(r.bytes[r.at]), r.take(8 + Int(r.u32(4)), { _ in }) else { return false }
        }
        return r.available == hashSize
    }
}
