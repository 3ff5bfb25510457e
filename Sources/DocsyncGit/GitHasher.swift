import Crypto

/// The hash of a repository's object format (SHA-1 or SHA-256, swift-crypto's), fed as bytes
/// come: the name of an object the agent writes, and the checksum that ends an index.
struct GitHasher {
    private enum State {
        case sha1(Insecure.SHA1)
        case sha256(SHA256)
    }

    private var state: State

    /// For hashes of `hashSize` bytes (32: SHA-256; otherwise SHA-1).
    init(hashSize: Int) {
        state = hashSize == 32 ? .sha256(SHA256()) : .sha1(Insecure.SHA1())
    }

    mutating func update(_ raw: UnsafeRawBufferPointer) {
        switch state {
        case .sha1(var h): h.update(bufferPointer: raw); state = .sha1(h)
        case .sha256(var h): h.update(bufferPointer: raw); state = .sha256(h)
        }
    }

    mutating func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    func finalize() -> [UInt8] {
        switch state {
        case .sha1(let h): Array(h.finalize())
        case .sha256(let h): Array(h.finalize())
        }
    }
}
