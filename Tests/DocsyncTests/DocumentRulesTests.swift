import Foundation
import DocsyncModel
import Testing

@Suite struct JSONRoundTripTests {
    @Test func numbersKeepTheirLiteralText() throws {
        let text = #"{"big":12345678901234567890123456789,"dec":0.10,"exp":1.5E+300,"neg":-0,"small":1e-400}"#
        let value = try JSONParser.parse(text)
        #expect(JSONWriter.string(value) == text)
        #expect(value.object?["big"] == .number("12345678901234567890123456789"))
    }

    @Test func keyOrderIsKept() throws {
        let text = #"{"z":1,"a":2,"m":{"y":[3,{"b":1,"a":2}],"c":null}}"#
        #expect(JSONWriter.string(try JSONParser.parse(text)) == text)
    }

    @Test func stringsSurviveWithUnicodeUnescaped() throws {
        let value = try JSONParser.parse(#"{"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \n\t/ 日本"}"#)
        #expect(value.object?["s"] == .string("café 😀 \"q\" \\ \n\t/ 日本"))
        let again = try JSONParser.parse(JSONWriter.string(value))
        #expect(again == value)
        #expect(JSONWriter.string(value).contains("café 😀"))
    }

    @Test(arguments: [
        (#"{"a":1,"b":[true,null,"x y"]}"#, true),
        (" {\"a\":1}\n", true),
        ("{}", true),
        (#"{"a":"x","b":"y z","c":{"d":"e"}}"#, true),
        (#"{"a": 1}"#, false),
        (#"{"a":"x" ,"b":"y"}"#, false),
        (#"{"a":"x","b":"y" }"#, false),
        ("{\"a\":[1,\n2]}", false),
        (#"{"s":"caf\u00e9"}"#, false),
        (#"{"s":"say \"hi\""}"#, false),
    ])
    func aTextAlreadyCompactIsFoundWithoutWritingIt(text: String, compact: Bool) throws {
        let bytes = Array(text.utf8)
        let range = JSONWriter.compactRange(of: bytes)
        #expect((range != nil) == compact)
        if let range { #expect(Array(bytes[range]) == JSONWriter.bytes(try JSONParser.parse(bytes))) }
    }

    @Test func controlCharactersAreEscapedInLowercaseHex() throws {
        let value = JSONValue.string("a\u{01}\u{1F}\u{0B}b")
        #expect(JSONWriter.string(value) == #""a\u0001\u001f\u000bb""#)
        #expect(try JSONParser.parse(JSONWriter.string(value)) == value)
    }

    @Test func prettyFormIsTwoSpaceIndented() throws {
        let value = try JSONParser.parse(#"{"a":[1,2],"b":{},"c":[]}"#)
        #expect(String(decoding: JSONWriter.fileBytes(value), as: UTF8.self) == "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {},\n  \"c\": []\n}\n")
    }

    /// A document's file is pretty unless indentation would be most of it or it would pass the
    /// limit: then it is its compact form, as small as it was on the wire, and reads the same.
    @Test func aFileIsCompactWhereIndentationWouldBeMostOfIt() throws {
        func file(_ value: JSONValue, limit: Int = DocumentRules.defaultMaxFileSize) -> String {
            String(decoding: JSONWriter.fileBytes(value, limit: limit), as: UTF8.self)
        }
        // 250 levels down, 20,000 small numbers: 500 spaces each in the pretty form (10 MB).
        let deep = try JSONParser.parse("{\"v\":" + String(repeating: "[", count: 250) + Array(repeating: "1", count: 20_000).joined(separator: ",") + String(repeating: "]", count: 250) + "}")
        let compact = JSONWriter.string(deep)
        #expect(file(deep) == compact + "\n")
        #expect(try JSONParser.parse(file(deep)) == deep)
        // A small document a dozen levels deep, and numbers four levels down, stay pretty.
        let nested = try JSONParser.parse(nested(12, id: "n"))
        #expect(file(nested).hasPrefix("{\n  \"id\": \"n\",\n  \"a\": {\n    \"a\": {"))
        let grid = try JSONParser.parse("{\"g\":[[[" + Array(repeating: "1", count: 5_000).joined(separator: ",") + "]]]}")
        #expect(file(grid).contains("\n        1,\n        1,"), "8 spaces for one digit and a comma: pretty")
        // Over the limit pretty, within it compact: compact; over it either way: compact still
        // (the folder's limit then says why it is not synced, as for any file).
        let flat = try JSONParser.parse("{\"a\":[" + Array(repeating: "12345", count: 1_000).joined(separator: ",") + "]}")
        let flatCompact = JSONWriter.string(flat)
        #expect(file(flat, limit: flatCompact.utf8.count + 100) == flatCompact + "\n")
        #expect(file(flat, limit: 10) == flatCompact + "\n")
        #expect(file(flat).contains("\n    12345,\n"))
        // The plain pretty form is never cut short, whatever its share.
        #expect(try JSONParser.parse(String(decoding: JSONWriter.bytes(deep, style: .pretty), as: UTF8.self)) == deep)
    }

    /// A parse that is charged for what it makes: every value is counted once, and the parse
    /// stops at the first charge refused, before it makes the rest.
    @Test func aChargedParseCountsEveryValueAndStopsWhenRefused() throws {
        let numbers = Array(repeating: "1", count: 20_000).joined(separator: ",")
        let text = Array(("{\"v\":" + String(repeating: "[", count: 100) + numbers + String(repeating: "]", count: 100) + "}").utf8)
        var charged: [Int] = []
        let parsed = try JSONParser.parseCharging(text, maxDepth: 512) { charged.append($0); return true }
        #expect(parsed.value == (try JSONParser.parse(text)))
        let values = 1 + 100 + 20_000  // the object, the arrays, the numbers
        #expect(charged.reduce(0, +) == values)
        #expect(charged.dropLast().allSatisfy { $0 == 4096 })
        var asked = 0
        do {
            _ = try JSONParser.parseCharging(text, maxDepth: 512) { values in
                asked += values
                return asked < 8192
            }
            Issue.record("a refused charge stops the parse")
        } catch {
            #expect(error.overBudget && asked == 8192, "\(error) after \(asked)")
        }
    }

    @Test(arguments: [
        ("{\"a\":1,}", 1, 8, "trailing comma"),
        ("{\n  \"a\": tru\n}", 2, 8, "unexpected character"),
        ("{\"a\":01}", 1, 7, "leading zeros"),
        ("[1,2", 1, 5, "expected ',' or ']'"),
        ("{\"a\":1}{}", 1, 8, "unexpected text after"),
        ("{\"a\":1,\"a\":2}", 1, 8, "duplicate key"),
        ("\"\\ud800\"", 1, 8, "lone high surrogate"),
    ])
    func syntaxErrorsSayWhereAndWhy(text: String, line: Int, column: Int, reason: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(text) }
        do {
            _ = try JSONParser.parse(text)
        } catch {
            #expect(error.line == line)
            #expect(error.column == column)
            #expect(error.reason.contains(reason), "\(error.reason)")
        }
    }

    /// Keys are checked against the ones before (a set from the 17th key on): a duplicate is
    /// found wherever it is.
    @Test(arguments: [2, 15, 16, 17, 40])
    func duplicateKeysAreFoundInObjectsOfAnySize(size: Int) {
        let keys = (0..<size).map { "\"k\($0)\":\($0)" }
        #expect(throws: Never.self) { try JSONParser.parse("{" + keys.joined(separator: ",") + "}") }
        for repeated in [0, size - 1] {
            let text = "{" + (keys + ["\"k\(repeated)\":true"]).joined(separator: ",") + "}"
            #expect(throws: JSONSyntaxError.self, "\(size) keys, k\(repeated) twice") { try JSONParser.parse(text) }
        }
    }

    @Test func bytesThatAreNotUTF8AreRefusedInKeysAndValues() throws {
        let invalid: [UInt8] = [0xC3, 0x28]  // a lead byte followed by ASCII
        for bytes in [Array("{\"".utf8) + invalid + Array("\":1}".utf8), Array("{\"a\":\"x".utf8) + invalid + Array("\"}".utf8)] {
            #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(bytes) }
        }
        #expect(try JSONParser.parse(Array("{\"é\":\"ü\"}".utf8)).object?["é"] == .string("ü"))
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let text = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(text) }
    }
}

@Suite struct ContentHashTests {
    /// The index's hashes are SHA-256 in lowercase hex (FIPS 180-2's test vectors).
    @Test func hashesAreLowercaseHexSHA256() {
        #expect(ContentHash.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(ContentHash.sha256Hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var hasher = ContentHasher()
        Array("abc".utf8).withUnsafeBytes { hasher.update($0) }
        #expect(hasher.finalize() == ContentHash.sha256Hex(Array("abc".utf8)))
    }
}

@Suite struct StampTests {
    /// Splicing the stamps into the stored text gives the bytes that setting them on the object
    /// and writing it out gives: for an empty body, a live document and a tombstone.
    @Test(arguments: [
        ("{}", Int64(1_000), Int64?.none),
        ("{}", 1_000, 2_000),
        (#"{"id":"a","docType":"note","t":"é"}"#, 1_700_000_000_123, nil),
        (#"{"id":"a","docType":"note","t":[1,{"x":null}]}"#, 1_700_000_000_123, 1_700_000_000_456),
    ])
    func stampsAreSplicedAsTheWriterWouldWriteThem(body: String, updatedAt: Int64, deletedAt: Int64?) throws {
        var object = try #require(try JSONParser.parse(body).object)
        object[DocumentRules.updatedAtKey] = .string(Timestamp(unixMilliseconds: updatedAt).rfc3339)
        if let deletedAt { object[DocumentRules.deletedAtKey] = .string(Timestamp(unixMilliseconds: deletedAt).rfc3339) }
        #expect(DocumentRules.stampedWireText(body: body, updatedAt: updatedAt, deletedAt: deletedAt) == JSONWriter.string(.object(object)))
        #expect(DocumentRules.stampedWireText(body: body, updatedAt: nil, deletedAt: nil) == body)
    }
}

@Suite struct IdentityRuleTests {
    @Test(arguments: [
        ("{\"docType\":\"note\"}", "{\"id\":\"X1\",\"docType\":\"note\"}"),
        ("{\n  \"docType\": \"note\",\n  \"t\": 1\n}\n", "{\n  \"id\": \"X1\",\n  \"docType\": \"note\",\n  \"t\": 1\n}\n"),
        ("{}", "{\"id\": \"X1\"}"),
        ("  { }\n", "  {\"id\": \"X1\"}\n"),
        ("{\t\"a\" : 1}", "{\t\"id\": \"X1\",\t\"a\" : 1}"),
        ("{ \"a\":1}", "{ \"id\":\"X1\", \"a\":1}"),
        ("\u{FEFF}{\"a\": 1}", "\u{FEFF}{\"id\": \"X1\",\"a\": 1}"),
    ])
    func idIsInsertedLeavingTheRestOfTheTextAlone(before: String, after: String) throws {
        let result = String(decoding: DocumentRules.insertingID("X1", into: Array(before.utf8)), as: UTF8.self)
        #expect(result == after)
        let object = try DocumentRules.parseObject(Array(result.utf8))
        #expect(object["id"] == "X1")
        #expect(object.keys.first == "id")
    }

    @Test func aCopysIDIsReplacedInPlace() throws {
        let before = "{\n  \"title\": \"x\",\n  \"id\" : \"orig\",\n  \"n\": [1, {\"id\": \"inner\"}]\n}\n"
        let after = String(decoding: DocumentRules.settingID("fresh", in: Array(before.utf8)), as: UTF8.self)
        #expect(after == before.replacingOccurrences(of: "\"orig\"", with: "\"fresh\""))
    }

    @Test func safeIdentifiers() {
        #expect(DocumentRules.isSafeIdentifier("89e37da1-f045-4d6f-bfa2-1917461543a2"))
        #expect(DocumentRules.isSafeIdentifier("INV_2026-001"))
        #expect(DocumentRules.isSafeIdentifier(String(repeating: "a", count: 128)))
        for bad in ["", "-lead", "_lead", "a/b", "../x", "a b", "ü", String(repeating: "a", count: 129), "a\u{0}b"] {
            #expect(!DocumentRules.isSafeIdentifier(bad), "\(bad)")
        }
    }

    @Test func declaredIDMustBeASafeString() throws {
        #expect(try DocumentRules.declaredID(of: JSONObject([("id", "abc")])) == "abc")
        #expect(try DocumentRules.declaredID(of: JSONObject([("x", 1)])) == nil)
        #expect(throws: DocumentProblem.self) { try DocumentRules.declaredID(of: JSONObject([("id", 42)])) }
        #expect(throws: DocumentProblem.self) { try DocumentRules.declaredID(of: JSONObject([("id", "../../etc")])) }
    }
}

@Suite struct DocTypeRuleTests {
    @Test func fieldWins() throws {
        #expect(try DocumentRules.docType(of: JSONObject([("docType", "note")]), relativePath: "invoices/a.json") == "note")
    }

    @Test func firstFolderUnderTheRootOtherwise() throws {
        #expect(try DocumentRules.docType(of: JSONObject(), relativePath: "invoices/2026/a.json") == "invoices")
    }

    @Test func aFileAtTheRootWithoutOneIsAnError() {
        #expect(throws: DocumentProblem.noDocType) { try DocumentRules.docType(of: JSONObject(), relativePath: "a.json") }
    }

    @Test func aNonStringDocTypeIsAnError() {
        #expect(throws: DocumentProblem.self) { try DocumentRules.docType(of: JSONObject([("docType", 3)]), relativePath: "x/a.json") }
        #expect(throws: DocumentProblem.self) { try DocumentRules.docType(of: JSONObject([("docType", "a/b")]), relativePath: "x/a.json") }
    }

    @Test func binaryAndNonObjectFilesAreRefused() throws {
        #expect(throws: DocumentProblem.binary) { try DocumentRules.parseObject([0x7B, 0x00, 0x7D]) }
        #expect(throws: DocumentProblem.binary) { try DocumentRules.parseObject([0x7B, 0xFF, 0x7D]) }
        // Inside a string too: a NUL, a byte that is not UTF-8, a truncated sequence.
        #expect(throws: DocumentProblem.binary) { try DocumentRules.parseObject(Array(#"{"a":"x"#.utf8) + [0x00] + Array(#""}"#.utf8)) }
        #expect(throws: DocumentProblem.binary) { try DocumentRules.parseObject(Array(#"{"a":"x"#.utf8) + [0xFF] + Array(#""}"#.utf8)) }
        #expect(throws: DocumentProblem.binary) { try DocumentRules.parseObject(Array(#"{"a":"x"#.utf8) + [0xC3] + Array(#""}"#.utf8)) }
        #expect(try DocumentRules.parseObject(Array(#"{"a":"é"}"#.utf8))["a"] == .string("é"))
        #expect(throws: DocumentProblem.notAnObject(kind: "an array")) { try DocumentRules.parseObject(Array("[1]".utf8)) }
        #expect(throws: DocumentProblem.tooLarge(size: 10, limit: 5)) { try DocumentRules.parseObject(Array("{\"a\":1234}".utf8), maxSize: 5) }
    }

    @Test func ignoredNames() {
        for name in [".a.json.swp", ".#a.json", "a.json~", "#a.json#", "4913", "a.sync-conflict-20260101-000000.json"] {
            #expect(!DocumentRules.isDocumentName(name), "\(name)")
        }
        for name in ["a.json", "é.json", "notes.sync-conflict.json", "x.sync-conflic-1.json", "a~b.json", "日本語.json"] {
            #expect(DocumentRules.isDocumentName(name), "\(name)")
        }
        for name in [".json", "a.jso", "a.json.bak", "a.JSON", "a.sync-conflict-.sync-conflict-x.json", "", "json"] {
            #expect(!DocumentRules.isDocumentName(name), "\(name)")
        }
        #expect(DocumentRules.isIgnoredName(".git") && DocumentRules.isIgnoredName("~") && !DocumentRules.isIgnoredName("") && !DocumentRules.isIgnoredName("a#"))
    }
}

@Suite struct TimestampTests {
    @Test func formatsRFC3339WithMilliseconds() {
        #expect(Timestamp(unixMilliseconds: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(unixMilliseconds: 1_795_000_000_123).rfc3339 == "2026-11-18T11:06:40.123Z")
        #expect(Timestamp(unixMilliseconds: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
    }

    @Test func parsesWhatItWritesAndOffsets() {
        for ms: Int64 in [0, 1_795_000_000_123, 951_782_400_000, -86_400_001] {
            #expect(Timestamp(rfc3339: Timestamp(unixMilliseconds: ms).rfc3339)?.unixMilliseconds == ms)
        }
        #expect(Timestamp(rfc3339: "2026-11-18T12:06:40.5+01:00")?.unixMilliseconds == 1_795_000_000_500)
        #expect(Timestamp(rfc3339: "2026-11-18 09:26:40Z") == nil)
        #expect(Timestamp(rfc3339: "yesterday") == nil)
    }
}
