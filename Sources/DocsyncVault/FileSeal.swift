import Crypto
import DocsyncModel
import Foundation

/// A file sealed for the server in chunks, so that any size streams with flat memory both ways:
/// a header (`DSF1` and a random 32-byte file id), then each 64 KiB of the file sealed with
/// ChaCha20-Poly1305 under a key derived for that file id, the nonce the chunk's number and
/// whether it is the last (a file cut short, or chunks reordered or dropped, does not open), the
/// header as associated data.
struct FileSeal: Sendable {
    static let magic = Array("DSF1".utf8)
    static let headerSize = 36
    static let chunk = 64 * 1024
    static let sealedChunk = chunk + 16

    let keys: VaultKeys

    func fileKey(_ fileID: some Sequence<UInt8>) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: keys.dataKey, info: Data("docsync-file-v1".utf8) + Data(fileID), outputByteCount: 32)
    }

    static func nonce(_ index: UInt64, last: Bool) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64(i))) }
        bytes[11] = last ? 1 : 0
        return try! ChaChaPoly.Nonce(data: bytes)  // twelve bytes: always a nonce
    }

    /// Opens a sealed file as it streams in, handing each chunk's plain bytes on.
    struct Opener {
        let seal: FileSeal
        /// The file id its document names; `nil`: any (a test of the seal alone).
        var expected: String? = nil
        var header: [UInt8] = []
        var associated = Data()
        var key: SymmetricKey?
        var pending: [UInt8] = []
        var index: UInt64 = 0

        mutating func feed(_ bytes: UnsafeRawBufferPointer, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
            var bytes = bytes[...]
            if header.count < FileSeal.headerSize {
                let take = min(FileSeal.headerSize - header.count, bytes.count)
                header += bytes.prefix(take)
                bytes = bytes.dropFirst(take)
                if header.count == FileSeal.headerSize {
                    guard Array(header.prefix(4)) == FileSeal.magic else { throw SealError("it is not a file sealed by docsync") }
                    if let expected, Hex.encode(header[4...]) != expected {
                        throw SealError("it is another sealed file than its document names (moved from another document)")
                    }
                    key = seal.fileKey(header[4...])
                    associated = Data(header)
                }
            }
            // A full chunk with more after it is not the last one. A chunk wholly inside `bytes`
            // is opened where it lies; only a chunk split across pieces is gathered in `pending`.
            if !pending.isEmpty {
                let take = min(bytes.count, FileSeal.sealedChunk - pending.count)
                pending += bytes.prefix(take)
                bytes = bytes.dropFirst(take)
                guard pending.count == FileSeal.sealedChunk, !bytes.isEmpty else { return }
                try open(pending[...], last: false, sink)
                pending.removeAll(keepingCapacity: true)
            }
            while bytes.count > FileSeal.sealedChunk {
                try open(UnsafeRawBufferPointer(rebasing: bytes.prefix(FileSeal.sealedChunk)), last: false, sink)
                bytes = bytes.dropFirst(FileSeal.sealedChunk)
            }
            pending += bytes
        }

        mutating func finish(_ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
            guard header.count == FileSeal.headerSize, pending.count >= 16 else { throw SealError("it ends before its last chunk (cut short)") }
            try open(pending[...], last: true, sink)
            pending = []
        }

        private mutating func open<Bytes: DataProtocol>(_ sealed: Bytes, last: Bool, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws
        where Bytes.SubSequence: DataProtocol {
            guard let key else { throw SealError("no header") }
            do {
                let box = try ChaChaPoly.SealedBox(nonce: FileSeal.nonce(index, last: last), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
                let plain = try ChaChaPoly.open(box, using: key, authenticating: associated)
                try plain.withUnsafeBytes(sink)
            } catch let error as SealError {
                throw error
            } catch {
                throw SealError("chunk \(index) does not open with this folder's key (changed, cut, reordered, or sealed with another key)")
            }
            index += 1
        }
    }
}
