@testable import DocsyncServer
import DocsyncTestSupport
import Foundation
import Testing

/// `serve --token-file`'s grammar. Regression: the last word of a line was taken as its token, so
/// `alice s3cret   # rotated, see ticket 42` refused alice and accepted `Token token=42`.
@Suite struct TokenFileParserTests {
    typealias Entry = TokenFileParser.Entry

    @Test func aCommentAfterATokenIsNotAToken() throws {
        let entries = try TokenFileParser.parse(Array("alice s3cret-token   # rotated, see ticket 42\n".utf8))
        #expect(entries == [Entry(name: "alice", token: "s3cret-token")])
    }

    @Test func aHashInsideAWordIsPartOfIt() throws {
        #expect(try TokenFileParser.parse(Array("bob s3#cret\n".utf8)) == [Entry(name: "bob", token: "s3#cret")])
    }

    @Test func blankLinesCommentsBareTokensAndCRLF() throws {
        let text = "# who may sync\r\n\n   \t\n  # indented comment\nbare-token\r\ncarol\ttok-c # c\n"
        #expect(try TokenFileParser.parse(Array(text.utf8)) == [Entry(name: "anonymous", token: "bare-token"), Entry(name: "carol", token: "tok-c")])
    }

    @Test func aLineOfThreeWordsIsRefusedWithItsNumber() {
        #expect(throws: TokenFileParser.Failure.self) { try TokenFileParser.parse(Array("alice a\nbob b 42\n".utf8)) }
        do {
            _ = try TokenFileParser.parse(Array("alice a\nbob b 42\n".utf8))
        } catch {
            #expect(error.line == 2)
            #expect(error.description.contains("line 2"))
        }
    }

    @Test func nonUTF8InACommentIsFineInATokenItIsNamed() throws {
        var bytes = Array("# caf".utf8) + [0xE9] + Array("\nalice tok\n".utf8)
        #expect(try TokenFileParser.parse(bytes) == [Entry(name: "alice", token: "tok")])
        bytes = Array("alice ok\nbob t".utf8) + [0xFF] + Array("k\n".utf8)
        do {
            _ = try TokenFileParser.parse(bytes)
            Issue.record("a token that is not UTF-8 was accepted")
        } catch {
            #expect(error == TokenFileParser.Failure(line: 2, reason: "not UTF-8"))
        }
    }

    @Test func controlCharactersAreRefused() {
        #expect(throws: TokenFileParser.Failure.self) { try TokenFileParser.parse(Array("alice to\u{1}k\n".utf8)) }
    }

    /// The strangest inputs: a huge line, only separators, only comments: no crash, no token.
    @Test func largeAndEmptyInputs() throws {
        #expect(try TokenFileParser.parse([UInt8]()) == [])
        #expect(try TokenFileParser.parse(Array(repeating: UInt8(ascii: "\n"), count: 100_000)) == [])
        let long = String(repeating: "x", count: 1 << 20)
        #expect(try TokenFileParser.parse(Array("n \(long)\n".utf8)).first?.token.count == 1 << 20)
    }
}

/// The server side of the grammar: the real token is accepted, the comment's last word is not, and
/// a file that does not parse is refused at start with its line.
extension HeavySuites {
@Suite(.serialized) struct TokenFileServerTests {
    @Test func aTrailingCommentDoesNotBecomeAToken() async throws {
        let work = try TempFolder("tokens-comment")
        defer { work.remove() }
        try work.write("tokens", "alice s3cret-alice-token   # rotated, see ticket 42\n")
        let server = try await TestServer.start(configure: { $0.tokenFile = work.file("tokens") })
        #expect(try await server.api.request("GET", "/api/stats", token: .some("s3cret-alice-token")).status == 200)
        #expect(try await server.api.request("GET", "/api/stats", token: .some("42")).status == 401)
        // Rewritten with a line that does not parse: the tokens stay as they were.
        try work.write("tokens", "alice s3cret-alice-token rotated\n")
        let deadline = ContinuousClock.now + .milliseconds(1_500)
        while ContinuousClock.now < deadline {
            #expect(try await server.api.request("GET", "/api/stats", token: .some("rotated")).status == 401)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await server.api.request("GET", "/api/stats", token: .some("s3cret-alice-token")).status == 200)
        await server.stop()
    }

    /// Regression: with alice's line removed from the token file, her open long poll was still
    /// answered with a document written after the revocation; only her next request got 401.
    @Test func revokingATokenEndsItsOpenLongPoll() async throws {
        let work = try TempFolder("tokens-revoke")
        defer { work.remove() }
        try work.write("tokens", "alice token-alice\nbob token-bob\n")
        let server = try await TestServer.start(configure: { $0.tokenFile = work.file("tokens") })
        let poll = Task {
            try await server.api.request("POST", "/api/sync", body: #"{"since":0,"wait":20}"#, token: .some("token-alice"))
        }
        try await Task.sleep(for: .milliseconds(300))  // the poll is held (nothing to answer yet)
        let revoked = ContinuousClock.now
        try work.write("tokens", "bob token-bob\n")
        try await Task.sleep(for: .milliseconds(1_200))
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"after","docType":"note"}"#, token: .some("token-bob")).status == 200)
        let reply = try await poll.value
        #expect(reply.status == 401, "the revoked reader is not told of the change: \(reply.status) \(reply.text)")
        #expect(!reply.text.contains("after"))
        #expect(ContinuousClock.now - revoked < .seconds(5), "ended within a few seconds, not at the end of its 20 s wait")
        await server.stop()
    }

    @Test func aFileThatDoesNotParseIsRefusedAtStartNamingTheLine() throws {
        let work = try TempFolder("tokens-bad")
        defer { work.remove() }
        try work.write("tokens", "# ok\nalice a b\n")
        #expect {
            _ = try TokenStore(file: work.file("tokens"))
        } throws: { error in
            "\(error)".contains("line 2") && "\(error)".contains(work.file("tokens"))
        }
    }
}
}
