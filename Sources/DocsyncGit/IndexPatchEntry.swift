/// The bytes of an entry the index patch writes that git did not: one added, and one whose name
/// version 4 must give against another name than it was read after.
enum PatchEntryBytes {
    typealias Field = IndexEntries.Field

    /// A path added as `update-index --index-info` adds it: no `stat` data, the mode and the
    /// object, flags of the name's length alone (git's `CE_NAMEMASK` for a longer name), the name
    /// padded with NULs to 8 bytes (versions 2 and 3) or as what it keeps of `previous` (4).
    static func added(_ path: [UInt8], mode: UInt32, hash: [UInt8], version: UInt32, after previous: [UInt8]) -> [UInt8] {
        var bytes = fixed(mode: mode, hash: hash, nameLength: path.count)
        if version == 4 { return named(bytes, path[...], after: previous) }
        let size = (bytes.count + path.count + 8) & ~7
        bytes += path
        bytes += [UInt8](repeating: 0, count: size - bytes.count)
        return bytes
    }

    /// An entry's fields before its name as `--index-info` writes them, for an added or replaced
    /// entry: no `stat` data, the mode and the object, flags of the name's length alone (git's
    /// `CE_NAMEMASK` for a longer name).
    static func fixed(mode: UInt32, hash: [UInt8], nameLength: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Field.hash)
        put(mode, at: Field.mode, in: &bytes)
        let length = min(nameLength, 0xfff)
        return bytes + hash + [UInt8(length >> 8), UInt8(length & 0xff)]
    }

    /// A version 4 entry (`bytes`, whose name starts at `nameStart`) with its name `name` written
    /// as what it keeps of `previous`.
    static func renamed(_ bytes: [UInt8], nameStart: Int, name: ArraySlice<UInt8>, after previous: [UInt8]) -> [UInt8] {
        named(Array(bytes[..<nameStart]), name, after: previous)
    }

    /// `fixed`, then version 4's name: how many bytes to drop from the end of `previous`, what
    /// to put after what is left, and a NUL.
    private static func named(_ fixed: [UInt8], _ name: ArraySlice<UInt8>, after previous: [UInt8]) -> [UInt8] {
        var common = 0
        while common < previous.count, common < name.count, previous[common] == name[name.startIndex + common] { common += 1 }
        return fixed + varint(previous.count - common) + name.dropFirst(common) + [0]
    }

    /// Git's `encode_varint`: seven bits a byte, high bits first, each byte after the first
    /// standing for one more than it holds (the reader is ``IndexEntries``).
    static func varint(_ value: Int) -> [UInt8] {
        var value = value
        var out = [UInt8(value & 0x7f)]
        value >>= 7
        while value != 0 {
            value -= 1
            out.insert(0x80 | UInt8(value & 0x7f), at: 0)
            value >>= 7
        }
        return out
    }

    /// `value` big-endian at `offset` of `bytes` (grown to hold it).
    static func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        if bytes.count < offset + 4 { bytes += [UInt8](repeating: 0, count: offset + 4 - bytes.count) }
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * i)) }
    }
}

/// Version 4's names as the patch writes them: an entry's name is written as what it keeps of
/// the last name written, which after an entry added or removed is not the last name read.
struct PatchNames {
    /// Version 4, with entries added or removed: only then is the last name kept.
    let kept: Bool
    /// The last name written (while `kept`).
    private(set) var written: [UInt8] = []
    /// The last name written is not the last name read: the next entry's name is written anew.
    private(set) var shifted = false

    init(kept: Bool) {
        self.kept = kept
        written.reserveCapacity(256)
    }

    /// An entry read was written, under its own name.
    mutating func wrote(_ name: ArraySlice<UInt8>) {
        guard kept else { return }
        written.removeAll(keepingCapacity: true)
        written.append(contentsOf: name)
        shifted = false
    }

    /// An entry was added: it is the last written, not the last read.
    mutating func added(_ path: [UInt8]) {
        guard kept else { return }
        written = path
        shifted = true
    }

    /// An entry read was left out: the last written is not the last read.
    mutating func removed() {
        shifted = kept
    }
}
