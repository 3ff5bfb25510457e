#if canImport(Glibc)
import Glibc
#endif
import DocsyncFiles
import DocsyncModel
@testable import DocsyncServer
import DocsyncTestSupport
import Foundation
import Testing

/// The reference endpoint under clients that misbehave on purpose (issue 21, findings 13-16).
extension HeavySuites {
@Suite(.serialized) struct HostileClientTests {
    /// With the process at 1,024 open files, 1,100 connections that never finished their headers
    /// locked every user out.
    @Test func halfOpenConnectionsDoNotLockOutAUser() async throws {
        FileSystem.raiseFileLimit()
        let work = try TempFolder("half-open")
        defer { work.remove() }
        try work.write("token", "half-open-token\n")
        let server = try DocsyncProcess(
            ["serve", "--data", work.file("data"), "--port", "0", "--token-file", work.file("token")],
            logDirectory: work.path, name: "serve", prefix: ["/usr/bin/prlimit", "--nofile=1024:", "--"])
        defer { Task { await server.stop() } }
        let url = try await server.firstLine()
        let port = Int(url.split(separator: ":").last!)!
        let api = APIClient(baseURL: url, token: "half-open-token")
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<1_100 {
            guard let fd = RawHTTP.connect(port: port) else { break }
            RawHTTP.send(fd, "GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Tok")
            sockets.append(fd)
        }
        #expect(sockets.count == 1_100)
        _ = try await api.request("GET", "/api/time")  // a warm connection, as a client has
        var fastest = Duration.seconds(60)
        for _ in 0..<5 {
            let start = ContinuousClock.now
            let reply = try await api.request("GET", "/api/stats")
            #expect(reply.status == 200)
            fastest = min(fastest, ContinuousClock.now - start)
        }
        #expect(fastest < .milliseconds(100), "a normal request answered in \(fastest)")
        // A new connection, too.
        let fresh = try await RawHTTP.exchange(port: port, head: "GET /api/time HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=half-open-token\r\n\r\n")
        #expect(fresh.hasPrefix("HTTP/1.1 200"))
        // A 250 MB batch call is refused before its body is read: the server's memory does not move.
        let before = Self.residentKiB(server.pid)
        let refused = try await RawHTTP.exchange(
            port: port,
            head: "POST /api/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=half-open-token\r\nContent-Type: application/json\r\nContent-Length: 250000000\r\n\r\n",
            body: String(repeating: "x", count: 1 << 20))
        #expect(refused.hasPrefix("HTTP/1.1 413"))
        #expect(Self.residentKiB(server.pid) - before < 8 << 10, "RSS \(before) KiB before, \(Self.residentKiB(server.pid)) KiB after")
    }

    /// Regression: 40 endless chunked `/api/sync` bodies (with a valid token) took the server from
    /// 113 MB to 2.5 GB before each got 413 at 64 MiB. The bodies being read share one budget.
    @Test func bodiesBeingReadShareOneBudget() async throws {
        let budget = BodyBudget(bytes: 1 << 20)
        let server = try await TestServer.start(configure: { $0.connections.bodyBudget = budget })
        let head = "POST /api/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=\(server.token)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        let chunk = String(repeating: " ", count: 100 << 10)
        let piece = String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n"
        // One endless body holds 800 KiB of the 1 MiB budget...
        let first = try #require(RawHTTP.connect(port: server.port))
        defer { close(first) }
        await RawHTTP.offPool {
            RawHTTP.send(first, head + "1\r\n{\r\n")
            for _ in 0..<8 { RawHTTP.send(first, piece) }
        }
        #expect(await eventually { budget.inUse >= 800 << 10 }, "the first body is being held")
        // ...so a second one is refused once it would pass the budget, not read on.
        let second = await RawHTTP.offPool {
            guard let fd = RawHTTP.connect(port: server.port) else { return "" }
            defer { close(fd) }
            RawHTTP.send(fd, head + "1\r\n{\r\n")
            for _ in 0..<4 { RawHTTP.send(fd, piece) }
            return RawHTTP.receive(fd)
        }
        #expect(second.hasPrefix("HTTP/1.1 503"), "\(second.prefix(80))")
        // The first ends; what it held is given back, and a normal call goes through.
        let ended = await RawHTTP.offPool {
            RawHTTP.send(first, "1\r\n}\r\n0\r\n\r\n")
            return RawHTTP.receive(first)
        }
        #expect(ended.hasPrefix("HTTP/1.1 200"))
        #expect(await eventually { budget.inUse == 0 })
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"since":0}"#).status == 200)
        await server.stop()
    }

    /// Documents 250 arrays deep, each within the depth and size limits, take a byte of text an
    /// array and 64 bytes parsed: one batch request of 27 MB took the server to 867 MiB. What a
    /// body's values take is charged to the body budget while the request is handled: a request
    /// that alone would pass it is refused (413, so an agent splits its batch), one that would
    /// pass it beside others is asked again later (503), and all of it is given back.
    @Test func whatABodysValuesTakeIsHeldInTheBudget() async throws {
        let budget = BodyBudget(bytes: 8 << 20)
        let server = try await TestServer.start(configure: { $0.connections.bodyBudget = budget })
        func batch(_ count: Int, from first: Int = 0) -> String {
            let docs = (first..<(first + count)).map { #"{"id":"d\#($0)","docType":"t","v":"# + String(repeating: "[", count: 250) + "1" + String(repeating: "]", count: 250) + "}" }
            return #"{"since":0,"echo":false,"documents":["# + docs.joined(separator: ",") + "]}"
        }
        // 600 documents: 150,000 values, 9.6 MB charged, in a body of 320 KB.
        let refused = try await server.api.request("POST", "/api/sync", body: batch(600))
        #expect(refused.status == 413 && refused.text.contains("values"), "\(refused.status) \(refused.text.prefix(200))")
        #expect(budget.inUse == 0)
        // The same documents in batches of 100 (1.6 MB charged each) are taken, and given back.
        for first in stride(from: 0, to: 600, by: 100) {
            #expect(try await server.api.request("POST", "/api/sync", body: batch(100, from: first)).status == 200)
        }
        #expect(await eventually { budget.inUse == 0 })
        #expect(try await server.api.documents(type: "t").count == 600)
        await server.stop()
    }

    /// The two refusals of a charge, told apart: one that would pass the budget beside what other
    /// requests hold is "busy" (503, asked again), one that alone would pass it is "too large"
    /// (413, split); neither takes anything, and a release gives back all a request took.
    @Test func aChargeIsBusyBesideOthersAndTooLargeAlone() {
        let budget = BodyBudget(bytes: 1 << 20)
        let (first, second) = (ParsedCharge(), ParsedCharge())
        let values = (600 << 10) / ParsedCharge.bytesPerValue
        #expect(first.take(values: values, from: budget, alsoHeld: 0))
        #expect(!second.take(values: values, from: budget, alsoHeld: 0))
        if case .busy? = second.refusal {} else { Issue.record("beside the first: busy, not \(String(describing: second.refusal))") }
        #expect(!second.take(values: 2 * values, from: budget, alsoHeld: 0))
        if case .tooLarge(let capacity)? = second.refusal { #expect(capacity == 1 << 20) } else { Issue.record("alone over the budget: too large") }
        #expect(budget.inUse == 600 << 10, "nothing taken by the refused charges")
        first.release()
        #expect(budget.inUse == 0)
        #expect(second.take(values: values, from: budget, alsoHeld: 100 << 10), "room again once the first is given back")
        second.release()
        #expect(budget.inUse == 0)
    }

    /// VmRSS of a process, KiB.
    static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func aHeadThatNeverEndsAndAnIdleConnectionAreClosed() async throws {
        let server = try await TestServer.start(configure: {
            $0.connections.headerTimeout = .milliseconds(500)
            $0.connections.idleTimeout = .seconds(1)
        })
        let start = ContinuousClock.now
        let partial = try #require(RawHTTP.connect(port: server.port))
        defer { close(partial) }
        RawHTTP.send(partial, "GET /api/stats HTTP/1.1\r\nHost: x\r\n")
        #expect(await RawHTTP.offPool { RawHTTP.receive(partial) }.isEmpty, "closed without a reply")
        #expect(ContinuousClock.now - start < .seconds(5))
        // An idle keep-alive connection after a request.
        let idle = try #require(RawHTTP.connect(port: server.port))
        defer { close(idle) }
        RawHTTP.send(idle, "GET /api/time HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=\(server.token)\r\n\r\n")
        let reply = await RawHTTP.offPool { RawHTTP.receive(idle) { $0.contains("SyncDuration") } }
        #expect(reply.hasPrefix("HTTP/1.1 200"))
        let idleStart = ContinuousClock.now
        #expect(await RawHTTP.offPool { RawHTTP.receive(idle) }.isEmpty, "closed once idle")
        #expect(ContinuousClock.now - idleStart < .seconds(5))
        await server.stop()
    }

    /// A body trickled at a byte every two seconds was accepted after 80 s.
    @Test func aTrickledBodyIsRefused() async throws {
        let server = try await TestServer.start(configure: {
            $0.connections.bodyGrace = .seconds(1)
            $0.connections.minimumBodyRate = 1_000
        })
        let body = #"{"id":"slow","docType":"t","pad":"\#(String(repeating: "p", count: 60))"}"#
        let answer = await RawHTTP.offPool { () -> String in
            guard let fd = RawHTTP.connect(port: server.port) else { return "" }
            defer { close(fd) }
            RawHTTP.send(fd, "PUT /api/document HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=\(server.token)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
            for byte in body {
                guard RawHTTP.send(fd, String(byte)) else { break }
                usleep(200_000)
                var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if Glibc.poll(&poll, 1, 0) > 0 { break }  // answered early
            }
            return RawHTTP.receive(fd)
        }
        #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer.prefix(100))")
        #expect(try await server.api.documents(type: "t").isEmpty)
        await server.stop()
    }

    /// An upload with `Host: attacker.example` made the stored URL point there.
    @Test func uploadURLsNeverComeFromTheHostHeader() async throws {
        let server = try await TestServer.start()
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"d","docType":"t"}"#).status == 200)
        let boundary = "b0undary"
        let body = "--\(boundary)\r\nContent-Disposition: form-data; name=\"targetDocument\"\r\n\r\n{\"targetId\":\"d\",\"targetDocType\":\"t\",\"targetProperty\":\"f\"}\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--\(boundary)--\r\n"
        let reply = try await RawHTTP.exchange(
            port: server.port,
            head: "POST /api/app/upload HTTP/1.1\r\nHost: attacker.example\r\nAuthorization: Token token=\(server.token)\r\n"
                + "Content-Type: multipart/form-data; boundary=\(boundary)\r\nContent-Length: \(body.utf8.count)\r\n\r\n",
            body: body)
        #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply.prefix(200))")
        let stored = try #require(try await server.api.documents(type: "t")["d"]?["f"]?.string)
        #expect(stored.hasPrefix(server.url + "/api/app/upload/"), "\(stored)")
        #expect(!stored.contains("attacker"))
        await server.stop()
    }

    /// `GET /api/document/type/my%20notes` returned `[]` for an existing "my notes" document.
    @Test func pathParametersArePercentDecoded() async throws {
        let server = try await TestServer.start()
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"n1","docType":"my notes"}"#).status == 200)
        let list = try await server.api.request("GET", "/api/document/type/my%20notes")
        guard case .array(let docs)? = list.json?.object?["data"] else { Issue.record("no list: \(list.text)"); return }
        #expect(docs.compactMap { $0.object?["id"]?.string } == ["n1"])
        #expect(try await server.api.request("GET", "/api/document/n%31").status == 200, "an id escaped is the id")
        #expect(try await server.api.request("GET", "/api/document/type/%ZZ").status == 200, "a malformed escape matches nothing")
        await server.stop()
    }
}
}

/// `docsync serve --tls-cert/--tls-key` and the agent's `--ca-file`, with a certificate made for
/// the test by openssl.
extension HeavySuites {
@Suite(.serialized) struct TLSTests {
    @Test func anAgentSyncsOverTLSWithTheServersCertificateAndRefusesWithoutIt() async throws {
        let work = try TempFolder("tls")
        defer { work.remove() }
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", work.file("key.pem"), "-out", work.file("cert.pem")]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)
        try work.write("token", "tls-token\n")
        let server = try DocsyncProcess(
            ["serve", "--data", work.file("data"), "--port", "0", "--token-file", work.file("token"),
             "--tls-cert", work.file("cert.pem"), "--tls-key", work.file("key.pem")],
            logDirectory: work.path, name: "serve")
        defer { Task { await server.stop() } }
        let url = try await server.firstLine()
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let folder = try TempFolder("tls-folder")
        defer { folder.remove() }
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        let untrusted = try DocsyncProcess(["sync", folder.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "untrusted")
        #expect(await eventually { !untrusted.isRunning })
        #expect(untrusted.process.terminationStatus != 0, "a server whose certificate is not trusted gets nothing")
        // Regression: the failure was BoringSSL's text alone; it now says what to do.
        #expect(untrusted.stdout.contains("--ca-file") || untrusted.stderr.contains("--ca-file"), "\(untrusted.stderr.suffix(300))")
        let doctor = try await runDocsync(["doctor", folder.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path)
        #expect(doctor.0 != 0 && doctor.1.contains("--ca-file"), "doctor says what to do: \(doctor.1.suffix(300))")
        let trusted = try DocsyncProcess(
            ["sync", folder.path, "--endpoint", url, "--token-file", work.file("token"), "--ca-file", work.file("cert.pem")],
            logDirectory: work.path, name: "trusted")
        #expect(await eventually { !trusted.isRunning })
        #expect(trusted.process.terminationStatus == 0, "\(trusted.stderr.suffix(400))")
        // Regression: `serve` started on an expired certificate without a word. This one is valid
        // for two days: said of it three days from now, not today.
        let tls = TLSFiles(certificate: work.file("cert.pem"), key: work.file("key.pem"))
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try tls.validityProblem(now: now) == nil)
        #expect(try tls.validityProblem(now: now + 3 * 86_400)?.contains("expired") == true)
        #expect(try tls.validityProblem(now: now - 86_400)?.contains("not valid before") == true)
    }
}
}

/// Several named tokens in a file, changed without a restart.
extension HeavySuites {
@Suite(.serialized) struct TokenFileTests {
    @Test func tokensAreAddedAndRevokedByEditingTheFile() async throws {
        let work = try TempFolder("tokens")
        defer { work.remove() }
        try work.write("tokens", "# who may sync\nalice token-a\nbob token-b\n")
        let server = try await TestServer.start(configure: { $0.tokenFile = work.file("tokens") })
        func status(_ token: String) async throws -> Int {
            try await server.api.request("GET", "/api/stats", token: .some(token)).status
        }
        #expect(try await status("token-a") == 200)
        #expect(try await status("token-b") == 200)
        #expect(try await status("token-c") == 401)
        try work.write("tokens", "alice token-a\ncarol token-c\n")
        #expect(await eventually { (try? await status("token-b")) == 401 }, "bob's token is revoked without a restart")
        #expect(try await status("token-c") == 200)
        #expect(try await status("token-a") == 200)
        // An empty file leaves no token valid (trust finding, fourth round, 8: it kept them all).
        try work.write("tokens", "")
        #expect(await eventually { (try? await status("token-a")) == 401 })
        await server.stop()
    }
}
}
