@testable import DocsyncServer
import DocsyncStore
import DocsyncTestSupport
import Foundation
import Testing

/// `serve --token-file`'s grammar. Regression: the last word of a line was taken as its token, so
/// `alice s3cret   # rotated, see ticket 42` refused alice and accepted `Token token=42`.
@Suite struct TokenFileParserTests {
    /// The entry a line of `token`, named `name`, with `rights`, parses to.
    static func Entry(name: String, token: String, rights: [String] = []) -> TokenFileParser.Entry {
        TokenFileParser.Entry(name: name, digest: TokenDigest.of(Array(token.utf8)), access: try! Access(rights: rights))
    }

    @Test func aCommentAfterATokenIsNotAToken() throws {
        let entries = try TokenFileParser.parse(Array("alice s3cret-token   # rotated, see ticket 42\n".utf8))
        #expect(entries == [Self.Entry(name: "alice", token: "s3cret-token")])
    }

    @Test func aHashInsideAWordIsPartOfIt() throws {
        #expect(try TokenFileParser.parse(Array("bob s3#cret\n".utf8)) == [Self.Entry(name: "bob", token: "s3#cret")])
    }

    @Test func blankLinesCommentsBareTokensAndCRLF() throws {
        let text = "# who may sync\r\n\n   \t\n  # indented comment\nbare-token\r\ncarol\ttok-c # c\n"
        #expect(try TokenFileParser.parse(Array(text.utf8)) == [Self.Entry(name: "anonymous", token: "bare-token"), Self.Entry(name: "carol", token: "tok-c")])
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
        #expect(try TokenFileParser.parse(bytes) == [Self.Entry(name: "alice", token: "tok")])
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
        #expect(try TokenFileParser.parse(Array("n \(long)\n".utf8)).first == Self.Entry(name: "n", token: long))
    }

    /// The four lines of docs/OPERATIONS.md: every right; read everything; read everything and
    /// write two docTypes; create reports only. A token may be given as its SHA-256.
    @Test func rightsAndHashedTokensAsTheOperatorsGuideWritesThem() throws {
        let hash = TokenDigest.hex(TokenDigest.of(Array("viewer-secret".utf8)))
        let text = "alice 9f2c\nviewer sha256:\(hash)   read:*\nbob 77ab read:* write:note write:task\ninbox c01d create:report  # drop box\n"
        let entries = try TokenFileParser.parse(Array(text.utf8))
        #expect(entries == [
            Self.Entry(name: "alice", token: "9f2c"), Self.Entry(name: "viewer", token: "viewer-secret", rights: ["read:*"]),
            Self.Entry(name: "bob", token: "77ab", rights: ["read:*", "write:note", "write:task"]),
            Self.Entry(name: "inbox", token: "c01d", rights: ["create:report"]),
        ])
        #expect(entries[0].access == .everything)
        #expect(entries[2].access.mayWrite("note") && !entries[2].access.mayWrite("invoice") && entries[2].access.mayRead("invoice"))
        #expect(entries[3].access.mayCreate("report") && !entries[3].access.mayWrite("report") && !entries[3].access.mayRead("report"))
        #expect(try TokenFileParser.parse(Array("tok-alone write:note\n".utf8)) == [Self.Entry(name: "anonymous", token: "tok-alone", rights: ["write:note"])])
    }

    @Test(arguments: [
        ("eve tok read:", "is not a docType"), ("eve tok delete:note", "not a right"), ("eve tok read:../x", "is not a docType"),
        ("read:*", "starts with NAME TOKEN"), ("a b c read:*", "3 words before the rights"), ("eve sha256:abc", "64 hex digits"),
        ("eve sha256:\(String(repeating: "g", count: 64))", "64 hex digits"),
    ])
    func aLineWhoseRightsOrHashDoNotParseIsRefusedWithItsNumber(line: String, why: String) {
        do {
            _ = try TokenFileParser.parse(Array("ok token\n\(line)\n".utf8))
            Issue.record("\(line) was accepted")
        } catch {
            #expect(error.line == 2 && error.reason.contains(why), "\(error)")
        }
    }

    /// `write:*` gives every docType but `schema`, whose documents are every docType's rules.
    @Test func writingSchemasNeedsTheirOwnRight() throws {
        let star = try Access(rights: ["read:*", "write:*"])
        #expect(star.mayWrite("note") && !star.mayWrite("schema") && !star.mayCreate("schema") && star.mayRead("schema"))
        #expect(try Access(rights: ["write:schema"]).mayWrite("schema"))
        #expect(Access.everything.mayWrite("schema"))
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
        await server.stop()
    }

    /// Trust finding (fourth round, 8): removing a token in the same save as a line that did not
    /// parse left the removed token valid, and an empty file left every old token valid. The file
    /// is now what it says: a revocation takes effect, a bad line grants nothing, an empty file
    /// leaves no token valid.
    @Test func aReloadAlwaysRevokesAndABadLineGrantsNothing() async throws {
        let work = try TempFolder("tokens-reload")
        defer { work.remove() }
        try work.write("tokens", "alice tok-alice\nbob tok-bob\ncarol tok-carol\n")
        let server = try await TestServer.start(configure: { $0.tokenFile = work.file("tokens") })
        func status(_ token: String) async throws -> Int { try await server.api.request("GET", "/api/stats", token: .some(token)).status }
        #expect(try await status("tok-bob") == 200)
        try work.write("tokens", "alice tok-alice\ncarol tok-carol rotated\n")  // bob removed; carol's line does not parse
        #expect(await eventually { (try? await status("tok-bob")) == 401 })
        #expect(try await status("tok-carol") == 401, "a bad line grants nothing")
        #expect(try await status("rotated") == 401)
        #expect(try await status("tok-alice") == 200)
        try work.write("tokens", "# everyone out\n")
        #expect(await eventually { (try? await status("tok-alice")) == 401 }, "an empty file leaves no token valid")
        await server.stop()
    }

    /// `serve` logs each reload with the names added and removed, and SIGHUP reloads (it ended
    /// the server at once, without a word, before).
    @Test func sighupReloadsTheTokensAndEveryReloadIsLogged() async throws {
        let work = try TempFolder("tokens-sighup")
        defer { work.remove() }
        try work.write("tokens", "alice tok-alice\n")
        let server = try DocsyncProcess(["serve", "--data", work.file("data"), "--port", "0", "--token-file", work.file("tokens")], logDirectory: work.path, name: "serve")
        let url = try await server.firstLine()
        let api = APIClient(baseURL: url, token: "tok-alice")
        try work.write("tokens", "alice tok-alice\ndave tok-dave read:*\n")
        server.signal(SIGHUP)
        #expect(await eventually { server.stderr.contains("was read again") && server.stderr.contains("tokens.added=dave") }, "\(server.stderr)")
        #expect(server.isRunning)
        #expect(try await api.request("GET", "/api/stats", token: .some("tok-dave")).status == 200)
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

    /// `docsync token add` as a new user tries it: the help shows how, the token is printed once
    /// and works, the file holds its hash only, a right that does not parse is named.
    @Test func tokenAddMakesAHashedLineAndTheTokenWorks() async throws {
        let work = try TempFolder("token-add")
        defer { work.remove() }
        let (helpCode, help, _) = try await runDocsync(["token", "add", "--help"], logDirectory: work.path)
        #expect(helpCode == 0 && help.contains("read:T, write:T and create:T") && help.contains("docsync token add viewer read:*"), "\(help)")
        let (code, out, err) = try await runDocsync(["token", "add", "viewer", "read:*", "--token-file", work.file("tokens")], logDirectory: work.path)
        #expect(code == 0, "\(err)")
        let token = out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 64 && token.allSatisfy(\.isHexDigit), "\(out)")
        let file = try work.read("tokens")
        #expect(file == "viewer sha256:\(TokenDigest.hex(TokenDigest.of(Array(token.utf8)))) read:*\n")
        #expect(!file.contains(token))
        #expect(try FileManager.default.attributesOfItem(atPath: work.file("tokens"))[.posixPermissions] as? Int == 0o600)
        _ = try await runDocsync(["token", "add", "alice", "--token-file", work.file("tokens")], logDirectory: work.path)
        #expect(try work.read("tokens").split(separator: "\n").count == 2)
        let (bad, _, why) = try await runDocsync(["token", "add", "eve", "read:a/b", "--token-file", work.file("tokens")], logDirectory: work.path)
        #expect(bad != 0 && why.contains("read:a/b"), "\(why)")

        let server = try DocsyncProcess(["serve", "--data", work.file("data"), "--port", "0", "--token-file", work.file("tokens")], logDirectory: work.path, name: "serve")
        let api = APIClient(baseURL: try await server.firstLine(), token: token)
        #expect(try await api.request("GET", "/api/stats").status == 200)
        #expect(try await api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note"}"#).status == 403)
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
