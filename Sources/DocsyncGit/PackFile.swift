import CZlib
import DocsyncModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A pack of git objects written by the agent (format 2, with its index, version 2), as `git
/// pack-objects` writes one: a header with the count of objects, each object (its kind and size,
/// then its bytes zlib-framed; a delta names its base by how far back in the pack it starts),
/// the checksum of all of it; and the index beside: the objects' names sorted, a CRC-32 and an
/// offset for each, the pack's checksum and its own. Written to temporaries in `objects/pack`
/// (named as git names its own, `tmp_pack_`, so that `git gc` clears one a crash left) and
/// flushed to disk, then put in place (``publish()``): the pack first, then the index, which
/// makes it visible to git.
final class PackFile {
    private let folder: String
    private let hashSize: Int
    private let count: Int
    private let temporary: (fd: Int32, path: String)
    private var hasher: GitHasher
    private var written = 0
    /// The objects written: their binary names, where each starts, and its CRC-32.
    private var objects: [(name: [UInt8], offset: Int, crc: UInt32)] = []
    /// The CRC-32 of the object being written, and its first byte's offset.
    private var crc: uLong = 0
    private var mark = 0
    /// Once the pack is in place, its temporary is no longer there to remove.
    private var placed = false

    enum Kind: UInt8 {
        case tree = 2
        case offsetDelta = 6
    }

    /// A pack of `count` objects for the object folder `objects`, with hashes of `hashSize` bytes.
    init(objects: String, hashSize: Int, count: Int) throws(GitError) {
        folder = objects + "/pack"
        if mkdir(folder, 0o777) != 0 && errno != EEXIST { throw LooseObjectStore.failure("cannot make", folder) }
        self.hashSize = hashSize
        self.count = count
        temporary = try LooseObjectStore.temporary(in: folder, prefix: "tmp_pack_")
        hasher = GitHasher(hashSize: hashSize)
        try write(([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2] + Self.bigEndian(UInt32(count)))[...])
    }

    deinit {
        close(temporary.fd)
        if !placed { unlink(temporary.path) }
    }

    /// Where the next object starts: a delta's base is named by it.
    var offset: Int { written }

    /// A tree whole, its bytes read from `reader` (a loose object) and stored as they are.
    func addWhole(_ reader: LooseObjectReader, name: [UInt8]) throws(GitError) {
        try begin(.tree, size: reader.size)
        let deflater = try Deflater(file: temporary.path)
        while let piece = try reader.next() { try deflater.add(piece, to: write) }
        try deflater.end(to: write)
        end(name)
    }

    /// An object as `delta` on the object that starts at `base` in this pack.
    func addDelta(_ delta: [UInt8], on base: Int, name: [UInt8]) throws(GitError) {
        let distance = written - base
        try begin(.offsetDelta, size: delta.count)
        // How far back the base is, seven bits a byte, the highest first, each byte but the
        // last one less than it says (git's `OFS_DELTA` encoding).
        var rest = distance
        var encoded = [UInt8(rest & 0x7f)]
        rest >>= 7
        while rest > 0 {
            rest -= 1
            encoded.insert(0x80 | UInt8(rest & 0x7f), at: 0)
            rest >>= 7
        }
        try write(encoded[...])
        let deflater = try Deflater(file: temporary.path, level: Z_BEST_SPEED)
        try deflater.add(delta[...], to: write)
        try deflater.end(to: write)
        end(name)
    }

    /// Ends the pack, writes its index, and puts both in place; returns the pack's path.
    func publish() throws(GitError) -> String {
        guard objects.count == count else { throw GitError("a pack of \(count) objects was given \(objects.count)") }
        let checksum = hasher.finalize()
        try LooseObjectStore.write(checksum[...], to: temporary.fd, file: temporary.path)
        let index = try LooseObjectStore.temporary(in: folder, prefix: "tmp_pack_")
        var indexPlaced = false
        defer {
            close(index.fd)
            if !indexPlaced { unlink(index.path) }
        }
        try LooseObjectStore.write(PackIndex.bytes(objects, packChecksum: checksum, hashSize: hashSize)[...], to: index.fd, file: index.path)
        for file in [temporary, index] where fsync(file.fd) != 0 { throw LooseObjectStore.failure("cannot flush", file.path) }
        let base = folder + "/pack-" + Hex.encode(checksum)
        guard rename(temporary.path, base + ".pack") == 0 else { throw LooseObjectStore.failure("cannot put a pack at", base + ".pack") }
        placed = true
        guard rename(index.path, base + ".idx") == 0 else { throw LooseObjectStore.failure("cannot put a pack's index at", base + ".idx") }
        indexPlaced = true
        // The names flushed too, before any loose object the pack holds is removed.
        let dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if dir >= 0 { close(dir) } }
        guard dir >= 0, fsync(dir) == 0 else { throw LooseObjectStore.failure("cannot flush", folder) }
        return base + ".pack"
    }

    /// An object's header: its kind and size, four bits in the first byte, seven in each after.
    private func begin(_ kind: Kind, size: Int) throws(GitError) {
        mark = written
        crc = crc32(0, nil, 0)
        var header = [UInt8(kind.rawValue << 4) | UInt8(size & 0x0f)]
        var rest = size >> 4
        while rest > 0 {
            header[header.count - 1] |= 0x80
            header.append(UInt8(rest & 0x7f))
            rest >>= 7
        }
        try write(header[...])
    }

    private func end(_ name: [UInt8]) {
        objects.append((name, mark, UInt32(crc)))
    }

    private func write(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        hasher.update(bytes)
        crc = bytes.withUnsafeBytes { crc32(crc, $0.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt($0.count)) }
        try LooseObjectStore.write(bytes, to: temporary.fd, file: temporary.path)
        written += bytes.count
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
    }
}

/// A pack's index, version 2: a fan-out table (how many names start with each byte or a lower
/// one), the names sorted, each object's CRC-32, its offset (past 2 GiB, a place in a table of
/// 8-byte offsets that follows), then the pack's checksum and the index's own.
enum PackIndex {
    static func bytes(_ objects: [(name: [UInt8], offset: Int, crc: UInt32)], packChecksum: [UInt8], hashSize: Int) -> [UInt8] {
        let sorted = objects.sorted { $0.name.lexicographicallyPrecedes($1.name) }
        var out: [UInt8] = [0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]
        var fanout = [UInt32](repeating: 0, count: 256)
        for object in sorted { fanout[Int(object.name[0])] += 1 }
        var running: UInt32 = 0
        for i in 0..<256 {
            running += fanout[i]
            out += PackFile.bigEndian(running)
        }
        for object in sorted { out += object.name }
        for object in sorted { out += PackFile.bigEndian(object.crc) }
        var large: [UInt8] = []
        for object in sorted {
            if object.offset < 0x8000_0000 {
                out += PackFile.bigEndian(UInt32(object.offset))
            } else {
                out += PackFile.bigEndian(0x8000_0000 | UInt32(large.count / 8))
                large += PackFile.bigEndian(UInt32(object.offset >> 32)) + PackFile.bigEndian(UInt32(object.offset & 0xffff_ffff))
            }
        }
        out += large
        out += packChecksum
        var hasher = GitHasher(hashSize: hashSize)
        hasher.update(out[...])
        return out + hasher.finalize()
    }
}
