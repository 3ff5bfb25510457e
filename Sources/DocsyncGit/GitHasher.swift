import Crypto

/// The hash of a repository's object format (SHA-1 or SHA-256, swift-crypto's), fed as bytes
/// come: the name of an object the agent writes, and the checksum that ends an index.
struct GitHasher {
    private enum State {
        case sha1(Insecure.SHA1)
        case sha256(SHA256)
        /// Held only while a hash is updated (see ``update(_:)``).
        case updating
    }

    private var state: State

    /// For hashes of `hashSize` bytes (32: SHA-256; otherwise SHA-1).
    init(hashSize: Int) {
        state = hashSize == 32 ? .sha256(SHA256()) : .sha1(Insecure.SHA1())
    }

    /// The hash is taken out of ``state`` before it is updated: swift-crypto's hash is copy on
    /// write, and one still held by `state` as well would be copied (its context allocated and
    /// filled) at every update; an index's entries are 100,000 updates.
    mutating func update(_ raw: UnsafeRawBufferPointer) {
        switch state {
        case .sha1(var h):
            state = .updating
            h.update(bufferPointer: raw)
            state = .sha1(h)
        case .sha256(var h):
            state = .updating
            h.update(bufferPointer: raw)
            state = .sha256(h)
        case .updating: preconditionFailure("a hash updated while it is updated")
        }
    }

    mutating func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    func finalize() -> [UInt8] {
        switch state {
        case .sha1(let h): Array(h.finalize())
        case .sha256(let h): Array(h.finalize())
        case .updating: preconditionFailure("a hash finished while it is updated")
        }
    }
}
