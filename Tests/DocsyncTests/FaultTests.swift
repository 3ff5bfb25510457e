@testable import DocsyncAgent
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import NIOCore
import Testing
import Synchronization

/// The agent against an endpoint that fails on purpose (a real HTTP proxy on loopback in front of
/// the reference endpoint). Every case ends with the server holding exactly the folder.
@Suite struct FaultTests {
    struct Rig {
        let server: TestServer
        let proxy: FaultProxy
        let folder: TempFolder
        let agent: TestAgent

        /// `batch: false` (the default here) makes the proxy a plain PingPong endpoint, so faults hit
        /// single documents; `batch: true` lets `/api/sync` through, faults hitting whole batches.
        static func start(startProxy: Bool = true, token: String? = nil, tokenFile: String? = nil, requestTimeout: Duration = .seconds(5), batch: Bool = false) async throws -> Rig {
            let server = try await TestServer.start()
            let proxy = FaultProxy(upstream: server.url)
            proxy.setBatchDisabled(!batch)
            try await proxy.start()
            if !startProxy { await proxy.stop() }
            let folder = try TempFolder("fault")
            let agent = try await TestAgent.start(folder: folder, endpoint: proxy.url, token: token ?? server.token) {
                $0.requestTimeout = requestTimeout
                $0.tokenFile = tokenFile
            }
            return Rig(server: server, proxy: proxy, folder: folder, agent: agent)
        }

        func matches(types: [String] = ["note"], deleted: Set<String> = []) async -> Bool {
            await eventually(timeout: .seconds(30)) { await serverMatchesFolder(folder.path, api: server.api, types: types, deleted: deleted) }
        }

        func finish() async {
            try? await agent.stop()
            await server.stop()  // first: it ends the long poll the proxy would otherwise wait out
            await proxy.stop()
            folder.remove()
        }
    }

    func writeNotes(_ folder: TempFolder, _ range: Range<Int>) throws {
        for i in range { try folder.write("notes/n\(i).json", #"{"id":"n\#(i)","docType":"note","i":\#(i)}"#) }
    }

    @Test func serverErrorsAreRetriedUntilTheEndpointRecovers() async throws {
        let rig = try await Rig.start()
        rig.proxy.schedule(Array(repeating: .status(500, message: "database on fire"), count: 6))
        try writeNotes(rig.folder, 0..<10)
        #expect(await rig.matches())
        let faults = rig.proxy.requests.filter { $0.fault != .pass }
        #expect(faults.count == 6)
        #expect(try await rig.server.api.documents(type: "note").count == 10)
        await rig.finish()
    }

    @Test func tooManyRequestsWaitsForRetryAfter() async throws {
        let rig = try await Rig.start()
        rig.proxy.schedule([.status(429, message: "slow down", retryAfter: 1)])
        try writeNotes(rig.folder, 0..<1)
        #expect(await rig.matches())
        let puts = rig.proxy.requests.filter { $0.method == "PUT" }
        #expect(puts.count == 2)
        #expect(puts[1].at - puts[0].at >= .seconds(1), "Retry-After: 1 honoured")
        await rig.finish()
    }

    @Test func rejectedTokenPausesPushingUntilTheTokenFileChanges() async throws {
        let tokens = try TempFolder("tokens")
        defer { tokens.remove() }
        try tokens.write("token", "wrong-token\n")
        let rig = try await Rig.start(token: "wrong-token", tokenFile: tokens.file("token"))
        try writeNotes(rig.folder, 0..<20)
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.paused?.contains("token rejected by \(rig.proxy.url)") == true })
        let attempts = rig.proxy.requests.count
        #expect(attempts <= 20, "one attempt per document at most, no retry storm")
        // Absence over time can only be checked over time: nothing more is sent while paused.
        try await Task.sleep(for: .seconds(1))
        #expect(rig.proxy.requests.count == attempts)
        #expect(rig.agent.logs.count(containing: "token rejected by") == 1)
        try tokens.write("token", rig.server.token + "\n")
        #expect(await rig.matches())
        #expect(try await AgentStatus.read(root: rig.folder.path).paused == nil)
        await rig.finish()
    }

    /// Regression: a token file changed from one wrong token to another wrong token unpaused the
    /// agent, which then sent a window every 2 s, was refused and said so, for as long as the file
    /// stayed wrong.
    @Test func aSecondWrongTokenIsTriedOnceNotEveryFewSeconds() async throws {
        let tokens = try TempFolder("tokens-storm")
        defer { tokens.remove() }
        try tokens.write("token", "wrong-token-1\n")
        let rig = try await Rig.start(token: "wrong-token-1", tokenFile: tokens.file("token"))
        try writeNotes(rig.folder, 0..<3)
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.paused != nil })
        let first = rig.proxy.requests.count
        try tokens.write("token", "wrong-token-2\n")
        #expect(await eventually { rig.proxy.requests.count > first }, "the new token is tried")
        #expect(await eventually { rig.agent.logs.count(containing: "token rejected by") == 2 })
        let tried = rig.proxy.requests.count
        // Absence over time can only be checked over time: the pause re-reads the file every 2 s.
        try await Task.sleep(for: .seconds(5))
        #expect(rig.proxy.requests.count == tried, "the refused token is not sent again")
        #expect(rig.agent.logs.count(containing: "token rejected by") == 2)
        try tokens.write("token", rig.server.token + "\n")
        #expect(await rig.matches())
        await rig.finish()
    }

    @Test func aRejectedDocumentIsReportedAndTheRestKeepFlowing() async throws {
        let rig = try await Rig.start()
        rig.proxy.setRule { _, body in body.contains("poison") ? .status(400, message: "poison is not allowed here") : .pass }
        try writeNotes(rig.folder, 0..<10)
        try rig.folder.write("notes/bad.json", #"{"id":"bad","docType":"note","x":"poison"}"#)
        #expect(await eventually { (try? await rig.server.api.documents(type: "note").count) == 10 })
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.rejected.first?.reason == "400: poison is not allowed here" })
        // The ten stored may be acknowledged after the rejection is recorded (their replies come
        // in other calls): pending falls to 0 then, with the rejected document not queued again.
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.counts.pending == 0 }, "not retried while unchanged")
        let status = try await AgentStatus.read(root: rig.folder.path)
        #expect(status.rejected.first?.path == "notes/bad.json")
        #expect(status.counts.pending == 0)
        try rig.folder.write("notes/bad.json", #"{"id":"bad","docType":"note","x":"fine"}"#)
        #expect(await rig.matches())
        #expect(try await AgentStatus.read(root: rig.folder.path).rejected.isEmpty)
        await rig.finish()
    }

    @Test func aReplyLostMidWayIsRetriedWithoutADuplicate() async throws {
        let rig = try await Rig.start()
        rig.proxy.schedule([.dropMidReply, .dropMidReply, .dropMidReply])
        try writeNotes(rig.folder, 0..<5)
        #expect(await rig.matches())
        #expect(try await rig.agent.settled())
        let docs = try await rig.server.api.documents(type: "note")
        #expect(docs.count == 5)
        #expect(rig.proxy.requests.filter { $0.fault == .dropMidReply }.count == 3)
        // The server applied each dropped write; the agent, never told, sent it again under the
        // same id. A resend makes at most one more revision (none when the agent's conditional
        // write finds its own content there), whichever documents the lost replies were for.
        let extra = docs.values.compactMap { v -> Int? in if case .number(let n)? = v["rev"] { Int(n) } else { nil } }.map { $0 - 1 }.reduce(0, +)
        #expect(extra <= 3, "\(docs.mapValues { $0["rev"] })")
        await rig.finish()
    }

    @Test func aStalledRequestTimesOutAndIsRetried() async throws {
        let rig = try await Rig.start(requestTimeout: .seconds(1))
        // Held longer than the test waits: the folder can only match the server through the retry.
        // (Held 3 s, the write the stall let through could land first on a loaded machine, and the
        // pull then told the agent its content was there: no retry was needed, rightly.)
        rig.proxy.schedule([.stall(.seconds(120))])
        try writeNotes(rig.folder, 0..<1)
        #expect(await rig.matches())
        #expect(rig.proxy.requests.count >= 2)
        await rig.finish()
    }

    /// A request timeout over a minute is the user's to set: a reply silent that long before its
    /// first byte (a large batch the server is still storing) is waited for, not ended by the HTTP
    /// client's own 60 s read timeout and sent again.
    @Test func aReplySilentForOverAMinuteIsWaitedForWhenTheRequestTimeoutAllowsIt() async throws {
        let server = try await TestServer.start()
        let proxy = FaultProxy(upstream: server.url)
        try await proxy.start()
        proxy.schedule([.stall(.seconds(65))])
        let client = try makeHTTPClient(requestTimeout: .seconds(120))
        let transport = HTTPTransport(baseURL: proxy.url, client: client, clock: nil, requestTimeout: .seconds(120))
        transport.setAuthorization("Token token=\(server.token)")
        let started = ContinuousClock.now
        // The client is shut down whatever the request did (one let go unshut traps).
        let sent = await { () async -> Result<HTTPTransport.Reply, EndpointError> in
            do throws(EndpointError) {
                return .success(try await transport.send(.POST, "/api/document", body: .bytes(ByteBuffer(string: #"{"id":"slow","docType":"note"}"#))))
            } catch { return .failure(error) }
        }()
        try await client.shutdown()
        #expect(try sent.get().ok)
        #expect(ContinuousClock.now - started >= .seconds(65))
        #expect(proxy.requests.count == 1, "answered on its first sending")
        #expect(try await server.api.documents(type: "note").keys.sorted() == ["slow"])
        await server.stop()
        await proxy.stop()
    }

    @Test func batchCallsSurviveServerErrorsAndLostReplies() async throws {
        let rig = try await Rig.start(batch: true)
        rig.proxy.schedule([.status(500), .status(503), .dropMidReply, .dropMidReply])
        try writeNotes(rig.folder, 0..<40)
        #expect(await rig.matches())
        #expect(try await rig.agent.settled())
        #expect(try await rig.server.api.documents(type: "note").count == 40)
        #expect(rig.proxy.requests.filter { $0.path == "/api/sync" && $0.fault == .dropMidReply }.count == 2)
        await rig.finish()
    }

    @Test func refusedConnectionsQueueWorkUntilTheEndpointAnswersAgain() async throws {
        let rig = try await Rig.start(startProxy: false)
        try writeNotes(rig.folder, 0..<10)
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.offlineSince != nil })
        // Offline can be seen before the first scan has recorded all ten: n4 removed before it was
        // recorded would be no deletion at all.
        #expect(await eventually {
            (try? await rig.agent.index.read { tx in try (0..<10).allSatisfy { try tx.document(id: "n\($0)") != nil } }) == true
        })
        let editedAt = Int64(Date().timeIntervalSince1970 * 1000)
        try rig.folder.write("notes/n3.json", #"{"id":"n3","docType":"note","i":3,"edited":"offline"}"#)
        try rig.folder.remove("notes/n4.json")
        #expect(await eventually {
            (try? await rig.agent.index.read { try $0.document(id: "n4")?.deletedAt }) != nil
        })
        let status = try await AgentStatus.read(root: rig.folder.path)
        #expect(status.counts.pending == 10)
        #expect(status.text(now: editedAt).contains("offline since"))
        try await Task.sleep(for: .milliseconds(300))  // so delivery time and observation time differ
        let cameBackAt = Int64(Date().timeIntervalSince1970 * 1000)
        try await rig.proxy.start(port: rig.proxy.port)
        #expect(await rig.matches(deleted: ["n4"]))
        let edited = try #require(try await rig.server.api.documents(type: "note")["n3"])
        let stamp = try #require(edited["updated_at"]?.string.flatMap { Timestamp(rfc3339: $0) })
        #expect(stamp.unixMilliseconds < cameBackAt, "stamped when the edit was seen, not when it was delivered")
        #expect(stamp.unixMilliseconds >= editedAt - 5)
        #expect(try await AgentStatus.read(root: rig.folder.path).offlineSince == nil)
        await rig.finish()
    }

    /// The endpoint refuses connections, or takes them and never answers, from the start: the
    /// folder is scanned and its documents queued at once, not after the server's time (asked
    /// first) has been given up on; and a stop does not wait for the pushes in flight to time out
    /// (30 s). The silent server would hold each request past the client's timeouts, so waiting
    /// for it cannot pass the deadlines below.
    @Test(arguments: [DeadPort.Kind.refusing, .silent]) func anAgentStartedOfflineQueuesTheFolderAtOnce(_ kind: DeadPort.Kind) async throws {
        let folder = try TempFolder("offline-start")
        defer { folder.remove() }
        try writeNotes(folder, 0..<5)
        let dead = try DeadPort(kind)
        let agent = try await TestAgent.start(folder: folder, endpoint: dead.url, token: "t")
        #expect(await eventually(timeout: .seconds(20)) { (try? await AgentStatus.read(root: folder.path))?.counts.pending == 5 })
        let stopped = Mutex(false)
        Task {
            try? await agent.stop()
            stopped.withLock { $0 = true }
        }
        #expect(await eventually(timeout: .seconds(15)) { stopped.withLock { $0 } }, "stopped before the push in flight timed out")
        withExtendedLifetime(dead) {}
    }

    /// `stop` (SIGINT/SIGTERM in the CLI) ends the agent promptly whatever it is waiting for.
    @Test func stoppingWaitsOutNeitherARetryDelayNorAnUpload() async throws {
        func stopsPromptly(_ agent: TestAgent) async -> Bool {
            let done = Mutex(false)
            Task {
                try? await agent.stop()
                done.withLock { $0 = true }
            }
            return await eventually(timeout: .seconds(10)) { done.withLock { $0 } }
        }
        // A pull failed and its retry is a minute away.
        let offline = try TempFolder("stop-offline")
        defer { offline.remove() }
        let closed = FaultProxy(upstream: "http://127.0.0.1:1")
        try await closed.start()
        let closedURL = closed.url
        await closed.stop()
        let waiting = try await TestAgent.start(folder: offline, endpoint: closedURL, token: "t", logLevel: .debug) {
            $0.retryPolicy = RetryPolicy(initial: .seconds(60), cap: .seconds(60))
        }
        #expect(await eventually { waiting.logs.count(containing: "pulling failed") > 0 })
        #expect(await stopsPromptly(waiting), "not after the minute's retry delay")

        // A file is being uploaded to an endpoint that takes a minute to answer.
        let rig = try await Rig.start(requestTimeout: .seconds(120))
        rig.proxy.setUploadFault(.stall(.seconds(60)))
        try rig.folder.write("scan.bin", String(repeating: "x", count: 1 << 20))
        try rig.folder.write("notes/a.json", #"{"id":"a1","docType":"note","scan":{"$file":"../scan.bin"}}"#)
        #expect(await eventually { rig.proxy.requests.contains { $0.path.hasPrefix("/api/app/upload") } })
        #expect(await stopsPromptly(rig.agent), "not after the upload's reply")
        let job = try await rig.agent.index.read { try $0.uploads(docID: "a1") }.first
        #expect(job?.state == .pending, "still to be sent, not marked failed")
        // The next start sends it.
        rig.proxy.setUploadFault(nil)
        let again = try await TestAgent.start(folder: rig.folder, endpoint: rig.proxy.url, token: rig.server.token)
        #expect(await eventually { (try? await rig.server.api.documents(type: "note")["a1"]?["scan"]?.string?.hasPrefix("http")) == true })
        try await again.stop()
        await rig.finish()
    }


    /// Regression: a file deleted while its upload ran ended with the server holding its URL
    /// (the finished upload put it there) and `status` saying synced.
    @Test func aFileDeletedWhileItIsUploadedLeavesNoURLOnTheServer() async throws {
        let rig = try await Rig.start(requestTimeout: .seconds(60), batch: true)
        rig.proxy.setUploadFault(.stall(.seconds(60)))  // until `endStalls` below
        try rig.folder.write("notes/gone.bin", String(repeating: "x", count: 64 << 10))
        try rig.folder.write("notes/a.json", #"{"id":"a1","docType":"note","scan":{"$file":"gone.bin"}}"#)
        #expect(await eventually { rig.proxy.requests.contains { $0.path.hasPrefix("/api/app/upload") } })
        try rig.folder.remove("notes/gone.bin")
        #expect(await eventually {
            (try? await AgentStatus.read(root: rig.folder.path))?.uploads.contains { $0.error?.contains("does not exist") == true } == true
        }, "the deletion is seen while the upload is held")
        rig.proxy.setUploadFault(nil)
        rig.proxy.endStalls()
        #expect(await eventually { rig.agent.logs.count(containing: "info uploaded ") == 1 }, "the held upload lands")
        #expect(await eventually { (try? await rig.server.api.documents(type: "note"))?["a1"]?["scan"] == .null }, "the server keeps no URL")
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.counts.pending == 0 })
        await rig.finish()
    }
}
