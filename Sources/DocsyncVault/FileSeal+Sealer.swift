import Crypto
import DocsyncEndpoint
import DocsyncModel
import Foundation
import Synchronization

extension FileSeal {
    /// The bytes sent for a file of `size` bytes: the header, the file, a tag a chunk (an empty
    /// file is one empty chunk).
    static func sealedSize(of size: Int64) -> Int64 {
        let chunks = max(1, (size + Int64(chunk) - 1) / Int64(chunk))
        return Int64(headerSize) + size + 16 * chunks
    }

    /// Seals one pass over a file of `size` bytes, in pieces of any size: the header first, then
    /// each chunk as soon as its bytes are in (the last one is known by the size). `plain` is told
    /// of the file's own bytes (the upload's progress and hash, as the agent counts them).
    final class Sealer: UploadEncoder {
        let header: [UInt8]
        private let plain: UploadProgress?
        private let key: SymmetricKey
        private let associated: Data
        private var left: Int64
        private var pending: [UInt8] = []
        private var index: UInt64 = 0
        private var started = false

        init(seal: FileSeal, size: Int64, plain: UploadProgress? = nil) {
            self.plain = plain
            header = FileSeal.magic + (0..<32).map { _ in UInt8.random(in: 0...255) }
            key = seal.fileKey(header[4...])
            associated = Data(header)
            left = size
        }

        /// The file's id (hex), which its document names (sealed) so that no other sealed file
        /// passes for it.
        var fileID: String { Hex.encode(header[4...]) }

        func encode(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) throws {
            begin(&out)
            guard Int64(pending.count + bytes.count) <= left else { throw SealError("the file is longer than when it was hashed") }
            plain?.sent(bytes)
            var rest = bytes[...]
            if !pending.isEmpty {
                // Fill the chunk begun by an earlier piece first.
                let take = min(rest.count, wanted - pending.count)
                pending += rest.prefix(take)
                rest = rest.dropFirst(take)
                guard pending.count == wanted else { return }
                try sealChunk(pending[...], into: &out)
                pending.removeAll(keepingCapacity: true)
            }
            while left > 0, rest.count >= wanted {
                let piece = UnsafeRawBufferPointer(rebasing: rest.prefix(wanted))
                rest = rest.dropFirst(wanted)
                try sealChunk(piece, into: &out)
            }
            pending += rest
        }

        func finish(into out: inout [UInt8]) throws {
            begin(&out)
            guard left == 0, pending.isEmpty else { throw SealError("the file is shorter than when it was hashed") }
            // An empty file is sealed as one empty last chunk.
            if index == 0 { try sealChunk([UInt8]()[...], into: &out) }
        }

        /// The header goes first, once, before anything else of the pass.
        private func begin(_ out: inout [UInt8]) {
            guard !started else { return }
            out += header
            started = true
        }

        /// The bytes the next chunk takes: a whole one, or what is left of the file.
        private var wanted: Int { Int(min(Int64(FileSeal.chunk), left)) }

        private func sealChunk(_ plain: some DataProtocol, into out: inout [UInt8]) throws {
            left -= Int64(plain.count)
            let box = try ChaChaPoly.seal(plain, using: key, nonce: FileSeal.nonce(index, last: left == 0), authenticating: associated)
            out += box.ciphertext
            out += box.tag
            index += 1
        }
    }

    /// The seal as an upload's encoding: each pass (a request sent again is a new pass) takes a new
    /// random file id, so no chunk is ever sealed twice under one key and nonce; the id of the last
    /// pass is the one the server stored. `plain` counts and hashes the file's own bytes.
    final class Upload: UploadEncoding {
        let seal: FileSeal
        let plain: UploadProgress?
        private let lastFileID = Mutex<String?>(nil)

        init(seal: FileSeal, plain: UploadProgress? = nil) {
            self.seal = seal
            self.plain = plain
        }

        var fileID: String? { lastFileID.withLock { $0 } }

        func encodedSize(of size: Int64) -> Int64 { FileSeal.sealedSize(of: size) }

        func encoder(size: Int64) -> any UploadEncoder {
            let sealer = Sealer(seal: seal, size: size, plain: plain)
            lastFileID.withLock { $0 = sealer.fileID }
            return sealer
        }
    }
}
