#if canImport(Glibc)
import Glibc
#endif

/// What a descriptor gives, read a piece at a time: `bytes[at...]` is read and not yet taken.
/// Reading more first drops what was taken, so the bytes held stay about what one step of the
/// reader needs, whatever the size of what is read (a git index of 8 MB, a tree `cat-file` prints,
/// a child's short lines).
struct DescriptorReader {
    let fd: Int32
    private(set) var bytes: [UInt8] = []
    /// Where what is not yet taken starts; the reader's user moves it on.
    var at = 0
    /// Where bytes taken but kept start, when the user keeps some (a writer copies runs of them
    /// at once): ``more()`` drops only what lies before both, and moves this with the bytes.
    var kept: Int?
    private(set) var ended = false
    /// The bytes one read asks for.
    let piece: Int
    /// The most bytes kept waiting: with more than this untaken, nothing more is read (a line,
    /// an entry or a header that long is not one the reader's user expects).
    let longest: Int

    init(fd: Int32, piece: Int = 64 << 10, longest: Int) {
        self.fd = fd
        self.piece = piece
        self.longest = longest
    }

    var available: Int { bytes.count - at }

    /// Reads more after what is there (what was taken dropped first); `false` at the end of what
    /// the descriptor gives, on an error, or when ``longest`` bytes or more wait already.
    mutating func more() -> Bool {
        guard !ended, available < longest else { return false }
        let dropped = min(at, kept ?? at)
        bytes.removeSubrange(..<dropped)
        at -= dropped
        kept = kept.map { $0 - dropped }
        let start = bytes.count
        let asked = min(piece, longest - available)
        bytes.append(contentsOf: repeatElement(0, count: asked))
        while true {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + start, asked) }
            if n < 0 && errno == EINTR { continue }
            bytes.removeLast(asked - max(n, 0))
            if n <= 0 { ended = true }
            return n > 0
        }
    }

    /// Takes the next `count` bytes, handing them to `each` in the pieces they are read in;
    /// `false` when the descriptor's bytes end first.
    mutating func take<E: Error>(_ count: Int, _ each: (ArraySlice<UInt8>) throws(E) -> Void) throws(E) -> Bool {
        var left = count
        while left > 0 {
            guard available > 0 || more() else { return false }
            let step = min(left, available)
            try each(bytes[at..<(at + step)])
            at += step
            left -= step
        }
        return true
    }

    /// Until `count` bytes wait to be taken; `false` when the descriptor's bytes end first.
    mutating func need(_ count: Int) -> Bool {
        while available < count {
            guard more() else { return false }
        }
        return true
    }
}
