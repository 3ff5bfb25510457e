import DocsyncModel
import Testing

/// One hex encoder and decoder for digests, git's object names, token digests and file ids.
@Suite struct HexTests {
    @Test func bytesGoToLowercaseHexAndBackInEitherCase() {
        let bytes: [UInt8] = [0x00, 0x0f, 0x10, 0x7f, 0x80, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "000f107f80abff")
        #expect(Hex.decode(Array("000f107f80abff".utf8)) == bytes)
        #expect(Hex.decode(Array("000F107F80ABFF".utf8)) == bytes)
        #expect(Hex.decode("000f107f80abff".utf8.dropFirst(2)) == Array(bytes.dropFirst()), "a slice's own indices")
        #expect(Hex.encode([]) == "" && Hex.decode([UInt8]()) == [])
        #expect(ContentHash.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func whatIsNotHexIsRefused() {
        for text in ["abc", "0g", "zz", " 0", "0x00", "é0"] {
            #expect(Hex.decode(Array(text.utf8)) == nil, "\(text)")
        }
    }
}
