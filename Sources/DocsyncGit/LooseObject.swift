import DocsyncModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One git object written by the agent (``LooseObjectStore``): its content handed on in pieces
/// as it is made (``append(_:)``), then framed, hashed and put in place (``finish()``).
///
/// A loose object's header (its kind and size) comes before its content, in its hash as in its
/// file, and a merged tree's size is known only at its end: the content is held until then, in
/// memory up to ``spill``, past it in a temporary file of the object folder, read back once. A
/// folder of a million documents (a tree of 47 MB) costs no more memory than one of 20,000.
final class LooseObject {
    /// Content held in memory up to this size by default; a larger object goes through a file.
    static let spill = 1 << 20
    /// The piece a spilled object is read back in.
    private static let piece = 64 << 10

    private let store: LooseObjectStore
    private let kind: String
    private let spill: Int
    private var held: [UInt8] = []
    private var spool: (fd: Int32, path: String)?
    /// The content's size so far.
    private(set) var size = 0

    /// An object of `kind` (`blob`, `tree`) for `store`, held in memory up to `spill` bytes.
    init(_ kind: String, in store: LooseObjectStore, spill: Int = LooseObject.spill) {
        self.kind = kind
        self.store = store
        self.spill = spill
    }

    deinit {
        if let spool {
            close(spool.fd)
            unlink(spool.path)
        }
    }

    /// The next `bytes` of the content.
    func append(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        size += bytes.count
        if spool == nil {
            if held.count + bytes.count <= spill {
                held.append(contentsOf: bytes)
                return
            }
            let made = try store.temporary()
            spool = made
            try LooseObjectStore.write(held[...], to: made.fd, file: made.path)
            held = []
        }
        guard let spool else { return }
        try LooseObjectStore.write(bytes, to: spool.fd, file: spool.path)
    }

    /// Writes the object and returns its hash (hex).
    func finish() throws(GitError) -> String {
        let out = try store.temporary()
        defer {
            close(out.fd)
            unlink(out.path)
        }
        let framing = try ObjectFraming(fd: out.fd, file: out.path, hashSize: store.hashSize)
        try framing.add(Array("\(kind) \(size)\0".utf8)[...])
        if let spool {
            var buffer = [UInt8](repeating: 0, count: Self.piece)
            var offset = 0
            while offset < size {
                let n = buffer.withUnsafeMutableBytes { pread(spool.fd, $0.baseAddress, min($0.count, size - offset), off_t(offset)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw n == 0 ? GitError("\(spool.path) was cut short") : LooseObjectStore.failure("cannot read", spool.path) }
                try framing.add(buffer[..<n])
                offset += n
            }
        } else {
            try framing.add(held[...])
        }
        let hash = try framing.end()
        try store.place(out.path, hash: hash)
        return hash
    }
}

/// A loose object's file as it is written: zlib's frame around the bytes (stored, level 0) and
/// their hash, both made as the bytes come.
private final class ObjectFraming {
    private var hasher: GitHasher
    private let deflater: Deflater
    private let fd: Int32
    private let file: String

    init(fd: Int32, file: String, hashSize: Int) throws(GitError) {
        self.fd = fd
        self.file = file
        hasher = GitHasher(hashSize: hashSize)
        deflater = try Deflater(file: file)
    }

    /// The next `bytes` of the object.
    func add(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        hasher.update(bytes)
        try deflater.add(bytes, to: write)
    }

    /// Ends the frame and returns the hash of what it holds (hex).
    func end() throws(GitError) -> String {
        try deflater.end(to: write)
        return Hex.encode(hasher.finalize())
    }

    private func write(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        try LooseObjectStore.write(bytes, to: fd, file: file)
    }
}
