@testable import DocsyncAgent
import Crypto
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
@testable import DocsyncVault
import Foundation
import Testing

/// The seals of an encrypted folder (issue 59), on their own: what a server that changes, moves
/// or replays ciphertext gets, what a wrong passphrase or a hostile key document does.
@Suite struct VaultTests {
    /// A cheap scrypt cost: the tests are about the seal, not the derivation's price.
    static let cheap = ScryptCost(n: 1 << 10, r: 8, p: 1)
    static let made = try! VaultKeys.create(passphrase: "correct horse battery", cost: cheap)
    var seal: DocumentSeal { DocumentSeal(Self.made.keys) }

    static let note = JSONObject([
        (key: "id", value: "n1"), (key: "docType", value: "note"), (key: "rev", value: .number("3")),
        (key: "title MARKER", value: "MARKER value"), (key: "nested", value: .object(JSONObject([(key: "deep", value: .array([.number("1.50")]))]))),
    ])

    @Test func aSealedDocumentKeepsOnlyItsEnvelopeInClearAndOpensToTheSameContent() throws {
        let sealed = try seal.seal(Self.note, id: "n1", docType: "note", number: 4)
        #expect(Set(sealed.members.map(\.key)) == ["id", "docType", "rev", "$enc"])
        #expect(!JSONWriter.string(.object(sealed)).contains("MARKER"))
        let (opened, number) = try seal.open(sealed)
        #expect(number == 4)
        #expect(JSONWriter.string(.object(opened)) == JSONWriter.string(.object(Self.note)), "the same members, in order, numbers as written")
    }

    /// Each document's key is HKDF-SHA256 of the data key with the associated data as info: made
    /// from an HMAC keyed once (for speed) and copied for each document, it must stay the very key
    /// a plain `HKDF.deriveKey` makes, or every folder sealed before would stop opening; and no
    /// copy may write into the one kept (keys made one after another and on many threads at once).
    @Test func aDocumentsKeyIsHKDFOfTheDataKeyWithItsAssociatedData() async {
        let bound = DocumentSeal.associatedData(id: "n1", docType: "note")
        let plain = HKDF<SHA256>.deriveKey(inputKeyMaterial: Self.made.keys.dataKey, info: bound, outputByteCount: 32)
        #expect(seal.documentKey(bound) == plain)
        #expect(seal.documentKey(DocumentSeal.associatedData(id: "n2", docType: "note")) != plain)
        let (seal, keys) = (self.seal, Self.made.keys)
        let wrong = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<200).filter { i in
                        let info = DocumentSeal.associatedData(id: "d\(task)-\(i)", docType: "t\(i % 3)")
                        return seal.documentKey(info) != HKDF<SHA256>.deriveKey(inputKeyMaterial: keys.dataKey, info: info, outputByteCount: 32)
                    }.count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
        #expect(seal.documentKey(bound) == plain)
    }

    @Test func aFlippedByteAnotherDocumentsOrDocTypesCiphertextAndAnotherKeyAreRefused() throws {
        let sealed = try seal.seal(Self.note, id: "n1", docType: "note", number: 1)
        let text = try #require(sealed["$enc"]?.string)
        var bytes = try #require(Data(base64Encoded: String(text.dropFirst(2))))
        for position in [0, 12, bytes.count / 2, bytes.count - 1] {
            var flipped = bytes
            flipped[position] ^= 0x01
            var tampered = sealed
            tampered["$enc"] = .string("1." + flipped.base64EncodedString())
            #expect(throws: SealError.self, "byte \(position)") { try seal.open(tampered) }
        }
        bytes.removeLast()
        var truncated = sealed
        truncated["$enc"] = .string("1." + bytes.base64EncodedString())
        #expect(throws: SealError.self) { try seal.open(truncated) }
        var moved = sealed
        moved["id"] = "n2"
        #expect(throws: SealError.self, "another document's ciphertext") { try seal.open(moved) }
        var retyped = sealed
        retyped["docType"] = "task"
        #expect(throws: SealError.self, "another docType's ciphertext") { try seal.open(retyped) }
        let other = try VaultKeys.create(passphrase: "another passphrase", cost: Self.cheap).keys
        #expect(throws: SealError.self, "another folder's key") { try DocumentSeal(other).open(sealed) }
        for garbage in ["", "1.", "2." + text.dropFirst(2), "1.%%%", "1." + String(repeating: "A", count: 40)] {
            var odd = sealed
            odd["$enc"] = .string(garbage)
            #expect(throws: SealError.self, "\(garbage.prefix(10))") { try seal.open(odd) }
        }
    }

    @Test func membersTheServerAddsBesideTheSealAreNotTakenAsTheDocumentsOwn() throws {
        var sealed = try seal.seal(Self.note, id: "n1", docType: "note", number: 1)
        sealed["title MARKER"] = "the server's version"
        sealed["added"] = true
        sealed["updated_by"] = "alice"
        let (opened, _) = try seal.open(sealed)
        #expect(opened["title MARKER"] == "MARKER value")
        #expect(opened["added"] == nil)
        #expect(opened["updated_by"] == "alice", "the envelope is the server's to say")
    }

    @Test func anOlderVersionThanTheFolderHasSeenIsRefusedAsAReplay() async throws {
        let folder = try TempFolder("vault-replay")
        defer { folder.remove() }
        let index = try Index.open(root: folder.path)
        let endpoint = SealedEndpoint(
            MemoryServer().client(id: "t"), keys: Self.made.keys,
            context: EndpointContext(clientID: "t", clock: .init(), requestTimeout: .seconds(5), credential: "", sealCounters: IndexSealCounters(index: index)))
        let first = try seal.seal(Self.note, id: "n1", docType: "note", number: 1)
        let second = try seal.seal(Self.note, id: "n1", docType: "note", number: 2)
        #expect(await endpoint.open([second]).opened.count == 1)
        let replayed = await endpoint.open([first])
        #expect(replayed.opened.isEmpty)
        #expect(replayed.refused.first?.reason.contains("replay") == true, "\(replayed.refused)")
        #expect(await endpoint.open([second]).opened.count == 1, "the same version again is no replay")
        let next = try await IndexSealCounters(index: index).next(["n1", "new"])
        #expect(next == ["n1": Int64(3), "new": Int64(1)])
    }

    @Test func aWrongPassphraseIsSaidAndTheRecoveryKeyOrANewPassphraseOpensTheSameKey() throws {
        let (keys, document, recovery) = (Self.made.keys, Self.made.document, Self.made.recovery)
        #expect(throws: VaultError.self) { try VaultKeys.open(document, passphrase: "Correct horse battery") }
        #expect(try VaultKeys.open(document, passphrase: "correct horse battery").dataKeyBytes == keys.dataKeyBytes)
        #expect(try VaultKeys.open(document, recovery: recovery.lowercased().replacingOccurrences(of: "-", with: " ")).dataKeyBytes == keys.dataKeyBytes)
        var wrongRecovery = Array(recovery)
        wrongRecovery[0] = wrongRecovery[0] == "A" ? "B" : "A"
        #expect(throws: VaultError.self) { try VaultKeys.open(document, recovery: String(wrongRecovery)) }
        let rewrapped = try keys.rewrapped(document, passphrase: "a new passphrase")
        #expect(try VaultKeys.open(rewrapped, passphrase: "a new passphrase").dataKeyBytes == keys.dataKeyBytes)
        #expect(throws: VaultError.self) { try VaultKeys.open(rewrapped, passphrase: "correct horse battery") }
        #expect(try VaultKeys.open(rewrapped, recovery: recovery).dataKeyBytes == keys.dataKeyBytes, "the recovery key still opens it")
        #expect(JSONWriter.string(.object(rewrapped.json)).utf8.count < 1024)
    }

    @Test func aHostileKeyDocumentIsRefusedBeforeAnyCostIsSpent() throws {
        let good = Self.made.document.json
        func with(_ change: (inout JSONObject) -> Void) -> JSONObject {
            var json = good
            change(&json)
            return json
        }
        func kdf(_ key: String, _ value: JSONValue) -> JSONObject {
            with { json in
                var kdf = json["kdf"]!.object!
                kdf[key] = value
                json["kdf"] = .object(kdf)
            }
        }
        let hostile: [JSONObject] = [
            kdf("n", .number("1073741824")), kdf("n", .number("1000")), kdf("r", .number("1000000")), kdf("p", .number("99")),
            kdf("n", .number("1e400")), kdf("salt", "c2hvcnQ="), kdf("name", "pbkdf2"), with { $0["v"] = .number("2") },
            with { $0["passphrase"] = "AAAA" }, with { $0["recovery"] = .null }, JSONObject(),
        ]
        let clock = ContinuousClock()
        for json in hostile {
            let spent = clock.measure { #expect(throws: VaultError.self, "\(json)") { _ = try VaultKeys.open(VaultDocument(json: json), passphrase: "x") } }
            #expect(spent < .seconds(2), "refused without deriving: \(json)")
        }
    }

    @Test(arguments: [0, 1, FileSeal.chunk - 1, FileSeal.chunk, FileSeal.chunk + 1, 3 * FileSeal.chunk + 17])
    func aFileSealedInChunksOpensWhateverPiecesItIsSealedAndArrivesIn(size: Int) throws {
        let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for sealPieces in [1, 4096, 70_000, 256 << 10, max(1, size)] {
            let sealed = try seal(plain, pieces: sealPieces).bytes
            #expect(Int64(sealed.count) == FileSeal.sealedSize(of: Int64(size)))
            #expect(sealed.count == FileSeal.headerSize + size + 16 * max(1, (size + FileSeal.chunk - 1) / FileSeal.chunk))
            for piece in [1, 4096, 70_000, sealed.count] {
                #expect(try open(sealed, pieces: piece) == plain, "sealed in pieces of \(sealPieces), opened in \(piece)")
            }
        }
    }

    @Test func aFileThatGrewOrShrankSinceItWasHashedIsNotSealed() throws {
        let sealer = FileSeal.Sealer(seal: FileSeal(keys: Self.made.keys), size: 10)
        var out: [UInt8] = []
        #expect(throws: SealError.self) { try [UInt8](repeating: 1, count: 11).withUnsafeBytes { try sealer.encode($0, into: &out) } }
        let short = FileSeal.Sealer(seal: FileSeal(keys: Self.made.keys), size: 10)
        try [UInt8](repeating: 1, count: 9).withUnsafeBytes { try short.encode($0, into: &out) }
        #expect(throws: SealError.self) { try short.finish(into: &out) }
    }

    @Test func everyPassOverAFileTakesAFreshFileID() {
        // A request sent again seals again: never the same chunks under the same key and nonce.
        let upload = FileSeal.Upload(seal: FileSeal(keys: Self.made.keys))
        let first = (upload.encoder(size: 5) as! FileSeal.Sealer).fileID
        let second = (upload.encoder(size: 5) as! FileSeal.Sealer).fileID
        #expect(first != second)
        #expect(upload.fileID == second)
    }

    /// `plain` sealed as an upload seals it, handed over in pieces of `pieces` bytes.
    func seal(_ plain: [UInt8], pieces: Int) throws -> (bytes: [UInt8], fileID: String) {
        let sealer = FileSeal.Sealer(seal: FileSeal(keys: Self.made.keys), size: Int64(plain.count))
        var out: [UInt8] = []
        var start = 0
        while start < plain.count {
            let end = min(plain.count, start + pieces)
            try plain[start..<end].withUnsafeBytes { try sealer.encode($0, into: &out) }
            start = end
        }
        try sealer.finish(into: &out)
        return (out, sealer.fileID)
    }

    @Test func aFileCutShortReorderedChangedOrUnderAnotherKeyDoesNotOpen() throws {
        let size = 3 * FileSeal.chunk + 5
        let plain = [UInt8](repeating: 7, count: size)
        let sealed = try seal(plain, pieces: 4096).bytes
        let (h, c) = (FileSeal.headerSize, FileSeal.sealedChunk)
        var flipped = sealed
        flipped[h + c + 3] ^= 1
        let swapped = Array(sealed[..<h]) + Array(sealed[(h + c)..<(h + 2 * c)]) + Array(sealed[h..<(h + c)]) + Array(sealed[(h + 2 * c)...])
        let cases: [(String, [UInt8])] = [
            ("cut at a chunk's end", Array(sealed.prefix(h + 3 * c))), ("cut inside", Array(sealed.dropLast(3))), ("a byte changed", flipped),
            ("chunks swapped", swapped), ("no header", Array(sealed.dropFirst(h))), ("empty", []),
        ]
        for (what, bytes) in cases { #expect(throws: SealError.self, "\(what)") { _ = try open(bytes, pieces: 4096) } }
        let other = try VaultKeys.create(passphrase: "another passphrase", cost: Self.cheap).keys
        #expect(throws: SealError.self) { _ = try open(sealed, pieces: 4096, keys: other) }
        // Another file of the same folder, named by this document: its id is not the one named.
        let first = try seal(plain, pieces: 4096)
        #expect(throws: SealError.self) { _ = try open(sealed, pieces: 4096, expected: first.fileID) }
        let own = try open(first.bytes, pieces: 4096, expected: first.fileID)
        #expect(own.count == size)
    }

    func open(_ sealed: [UInt8], pieces: Int, keys: VaultKeys = made.keys, expected: String? = nil) throws -> [UInt8] {
        var opener = FileSeal.Opener(seal: FileSeal(keys: keys), expected: expected)
        var out: [UInt8] = []
        var start = 0
        while start < sealed.count {
            let end = min(sealed.count, start + pieces)
            try sealed[start..<end].withUnsafeBytes { try opener.feed($0) { out += $0 } }
            start = end
        }
        try opener.finish { out += $0 }
        return out
    }
}
