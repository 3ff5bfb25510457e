import CZlib
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loose object read by the agent itself, where `cat-file --batch` read it in a process of its
/// own: the trees a trickle's commit merges into are the agent's own loose objects, and reading
/// the folder's tree (4.7 MB at 100,000 files) through `cat-file` and its pipe was about 11 ms of
/// git's CPU a commit, besides the process.
///
/// An object that is not loose here (packed by `git gc`, in an alternate), or whose file does
/// not start as a loose object does, gives `nil` at ``init(hash:in:)``, and `cat-file` reads it.
/// As with `cat-file`, the object's hash is not checked; its header, its size and zlib's own
/// checksum are. 64 KiB of it are held at a time.
final class LooseObjectReader {
    /// The object's kind (`tree`, `commit`, `blob`) and size, from its header.
    private(set) var kind = ""
    private(set) var size = 0
    private let fd: Int32
    private let path: String
    /// zlib's state, and the buffers it reads from and inflates into: at fixed places, since the
    /// stream points into them from one call to the next.
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private static let piece = 64 << 10
    private let input = UnsafeMutablePointer<UInt8>.allocate(capacity: piece)
    private let output = UnsafeMutablePointer<UInt8>.allocate(capacity: piece)
    /// Bytes of the content inflated with the header, not yet handed on.
    private var early: ArraySlice<UInt8> = []
    /// Bytes of the content handed on so far.
    private var handed = 0
    private var ended = false

    /// The loose object `hash` (hex) of `store`; `nil` when it is not loose there.
    init?(hash: String, in store: LooseObjectStore) {
        let digits = hash.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        path = store.path(of: hash)
        fd = digits && hash.utf8.count == store.hashSize * 2 ? open(path, O_RDONLY | O_CLOEXEC) : -1
        stream.initialize(to: z_stream())
        // Every property is set: from here `deinit` ends the stream and closes the file.
        guard fd >= 0, docsync_inflate_init(stream) == Z_OK, let (kind, size) = header() else { return nil }
        self.kind = kind
        self.size = size
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        input.deallocate()
        output.deallocate()
        if fd >= 0 { close(fd) }
    }

    /// The content, handed to `sink` in pieces; throws when it is not of the header's size or
    /// zlib finds the frame damaged.
    func body(into sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) {
        while let piece = try next() { try sink(piece) }
    }

    /// The content's next piece (never empty), `nil` after its last; throws as ``body(into:)``
    /// does.
    func next() throws(GitError) -> ArraySlice<UInt8>? {
        let n = try read(into: UnsafeMutableBufferPointer(start: output, count: Self.piece))
        return n == 0 ? nil : Array(UnsafeBufferPointer(start: output, count: n))[...]
    }

    /// The content's next bytes inflated into `destination` (not empty): how many, 0 after the
    /// last. Throws as ``body(into:)`` does. For reading two objects side by side, each into a
    /// buffer of its own (``TreeDelta``), without a copy between.
    func read(into destination: UnsafeMutableBufferPointer<UInt8>) throws(GitError) -> Int {
        if !early.isEmpty {
            let n = min(early.count, destination.count)
            _ = UnsafeMutableBufferPointer(rebasing: destination[..<n]).initialize(from: early.prefix(n))
            early = early.dropFirst(n)
            return try counted(n)
        }
        while !ended {
            guard let n = inflate(into: destination.baseAddress!, capacity: destination.count) else { throw GitError("the git object \(path) is damaged") }
            if n > 0 { return try counted(n) }
        }
        guard handed == size else { throw GitError("the git object \(path) is shorter than its header says") }
        return 0
    }

    private func counted(_ n: Int) throws(GitError) -> Int {
        handed += n
        guard handed <= size else { throw GitError("the git object \(path) is longer than its header says") }
        return n
    }

    /// `<kind> <size>\0`, inflated from the start (at most 64 bytes, as git's longest).
    private func header() -> (String, Int)? {
        var head: [UInt8] = []
        while !ended {
            guard let n = inflate(into: output, capacity: Self.piece) else { return nil }
            head += UnsafeBufferPointer(start: output, count: n)
            if let nul = head.firstIndex(of: 0) {
                let fields = String(decoding: head[..<nul], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
                guard nul <= 64, fields.count == 2, let size = Int(fields[1]), size >= 0, String(size) == fields[1] else { return nil }
                early = head[(nul + 1)...]
                return (String(fields[0]), size)
            }
            guard head.count <= 64 else { return nil }
        }
        return nil
    }

    /// The next bytes inflated into `destination` (none at the frame's end, or while zlib reads
    /// its own framing): how many; `nil` on a damaged frame, a file cut short, or an error reading it.
    private func inflate(into destination: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int? {
        if stream.pointee.avail_in == 0 {
            var n: Int
            repeat { n = Glibc.read(fd, input, Self.piece) } while n < 0 && errno == EINTR
            guard n > 0 else { return nil }
            stream.pointee.next_in = input
            stream.pointee.avail_in = UInt32(n)
        }
        stream.pointee.next_out = destination
        stream.pointee.avail_out = UInt32(min(capacity, Int(UInt32.max)))
        switch CZlib.inflate(stream, Z_NO_FLUSH) {
        case Z_STREAM_END: ended = true
        case Z_OK, Z_BUF_ERROR: break
        default: return nil
        }
        return min(capacity, Int(UInt32.max)) - Int(stream.pointee.avail_out)
    }
}
