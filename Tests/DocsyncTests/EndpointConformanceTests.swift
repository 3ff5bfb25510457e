import DocsyncClock
import DocsyncEndpoint
import DocsyncModel
import DocsyncTestSupport
import Testing

/// The contract of the endpoint seam, in code: every adapter (see `EndpointFixture.all`) passes
/// these unchanged. Two clients of one server: A writes, B reads, as two agents would.
@Suite struct EndpointConformanceTests {
    /// Runs `body` with a started server; stops it whatever happens.
    func with(_ fixture: EndpointFixture, _ body: (LiveEndpoint) async throws -> Void) async throws {
        let live = try await fixture.start()
        do {
            try await body(live)
        } catch {
            await live.stop()
            throw error
        }
        await live.stop()
    }

    /// The document's content as the folder would hold it: no server stamps, no revision.
    func content(_ doc: JSONObject?) -> JSONObject? { doc.map { WireForm.body($0, docType: $0["docType"]?.string ?? "") } }

    /// Pulls from `after` until nothing more waits; returns the changes by id and the last cursor.
    func pullAll(_ client: any DocumentEndpoint, after: SyncCursor?) async throws -> ([String: JSONObject], SyncCursor?) {
        var cursor = after
        var seen: [String: JSONObject] = [:]
        while true {
            let reply = try await client.pull(after: cursor, wait: nil)
            for doc in reply.changes { if let id = doc["id"]?.string { seen[id] = doc } }
            if let next = reply.cursor { cursor = next }
            if !reply.more { return (seen, cursor) }
        }
    }

    /// Regression: sync-rails answered every fetch with `nil`, which the engine reads as "the
    /// server has no such document". An adapter that cannot fetch one document says so.
    @Test(arguments: EndpointFixture.all)
    func aFetchFindsAStoredDocumentOrSaysItCannotFetch(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let (a, b) = (live.client("client-a"), live.client("client-b"))
            let change = live.change("fetched", #""title":"here""#)
            _ = try await a.push([change], pullingAfter: nil)
            do throws(EndpointError) {
                let found = try await b.fetch(id: "fetched", docType: live.docType)
                #expect(found?["title"] == .string("here"), "a stored document is found: \(String(describing: found))")
                #expect(try await b.fetch(id: "never-stored", docType: live.docType) == nil)
            } catch .unsupported {
                // Said, not pretended: the engine knows it cannot ask.
            } catch {
                Issue.record("fetch failed: \(error)")
            }
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aPushedDocumentIsStoredAndReachesAnotherClient(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let (a, b) = (live.client("client-a"), live.client("client-b"))
            let change = live.change("doc1", #""title":"first","n":1.50"#)
            let reply = try await a.push([change], pullingAfter: nil)
            let outcome = try #require(reply.outcomes["doc1"])
            if case .failed(let error) = outcome { Issue.record("not stored: \(error)") }
            let (pulled, _) = try await pullAll(b, after: nil)
            // The same content by value: a server that stores parsed JSON may give back `1.5`.
            let sent = try #require(content(try JSONParser.parse(change.body).object))
            #expect(content(pulled["doc1"]).map { $0.sameContent(as: sent) } == true, "\(String(describing: pulled["doc1"]))")
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aPullAfterTheReturnedCursorBringsEachChangeOnce(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let (a, b) = (live.client("client-a"), live.client("client-b"))
            _ = try await a.push([live.change("d1", #""v":1"#), live.change("d2", #""v":1"#)], pullingAfter: nil)
            let (first, cursor) = try await pullAll(b, after: nil)
            #expect(Set(first.keys) == ["d1", "d2"])
            let (nothing, same) = try await pullAll(b, after: cursor)
            #expect(nothing.isEmpty, "nothing new: \(nothing.keys.sorted())")
            let base = first["d1"].flatMap { if case .number(let r)? = $0[DocumentRules.revKey] { Int64(r) } else { nil } }
            _ = try await a.push([live.change("d1", #""v":2"#, base: base)], pullingAfter: nil)
            let (second, _) = try await pullAll(b, after: same)
            #expect(Set(second.keys) == ["d1"], "only the change: \(second.keys.sorted())")
            #expect(second["d1"]?["v"] == 2)
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aTombstoneTravelsAsDeletedAt(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let (a, b) = (live.client("client-a"), live.client("client-b"))
            _ = try await a.push([live.change("gone", #""v":1"#)], pullingAfter: nil)
            let (_, cursor) = try await pullAll(b, after: nil)
            let (known, _) = try await pullAll(live.client("client-c"), after: nil)
            let base = known["gone"].flatMap { if case .number(let r)? = $0[DocumentRules.revKey] { Int64(r) } else { nil } }
            _ = try await a.push([live.change("gone", #""v":1"#, base: base, deleted: true)], pullingAfter: nil)
            let (after, _) = try await pullAll(b, after: cursor)
            let deletedAt = try #require(after["gone"]?[DocumentRules.deletedAtKey])
            #expect(!deletedAt.isNull)
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aWriteOnAStaleRevisionIsAConflictWhereTheServerKeepsRevisions(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let (a, b) = (live.client("client-a"), live.client("client-b"))
            _ = try await a.push([live.change("c", #""v":1"#)], pullingAfter: nil)
            let (known, _) = try await pullAll(b, after: nil)
            let base = known["c"].flatMap { if case .number(let r)? = $0[DocumentRules.revKey] { Int64(r) } else { nil } }
            _ = try await a.push([live.change("c", #""v":2"#, base: base)], pullingAfter: nil)
            let reply = try await b.push([live.change("c", #""v":3"#, base: base)], pullingAfter: nil)
            if a.capabilities.detectsConflicts {
                guard case .failed(.conflict(let current))? = reply.outcomes["c"] else {
                    Issue.record("expected a conflict, got \(String(describing: reply.outcomes["c"]))")
                    return
                }
                // With the current document, or fetchable: the engine merges against it.
                var server = current
                if server == nil { server = try await b.fetch(id: "c", docType: live.docType) }
                #expect(server?["v"] == 2)
            } else {
                // No revisions: the last write wins on the server.
                let (now, _) = try await pullAll(live.client("client-c"), after: nil)
                #expect(now["c"]?["v"] == 3)
            }
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aDocumentTheServerRefusesIsRejectedAloneWithItsReason(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let a = live.client("client-a")
            let poison = OutgoingChange(id: "poison", docType: live.poisonType ?? live.docType, body: live.poison, baseRevision: nil)
            let reply = try await a.push([live.change("fine", #""v":1"#), poison], pullingAfter: nil)
            guard case .failed(.rejected(let reason))? = reply.outcomes["poison"] else {
                Issue.record("expected a rejection, got \(String(describing: reply.outcomes["poison"]))")
                return
            }
            #expect(!reason.isEmpty)
            if case .failed(let error)? = reply.outcomes["fine"] { Issue.record("the good document failed too: \(error)") }
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aWrongCredentialIsUnauthorizedAndTheRightOneWorksOnceSet(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let client = live.make("client-a", "wrong-credential", nil)
            do throws(EndpointError) {
                _ = try await client.push([live.change("x", #""v":1"#)], pullingAfter: nil)
                Issue.record("a wrong credential was accepted")
            } catch .unauthorized {
            } catch {
                Issue.record("expected unauthorized, got \(error)")
            }
            client.useCredential(live.credential)
            let reply = try await client.push([live.change("x", #""v":1"#)], pullingAfter: nil)
            if case .failed(let error)? = reply.outcomes["x"] { Issue.record("not stored with the right credential: \(error)") }
        }
    }

    @Test(arguments: EndpointFixture.all)
    func capabilitiesAreDeclaredOnceTheServerAnswered(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let a = live.client("client-a")
            _ = try await a.pull(after: nil, wait: nil)
            let capabilities = a.capabilities
            #expect(capabilities.pull != .unknown)
            #expect(capabilities.documentsPerCall >= 1 && capabilities.callsInFlight >= 1 && capabilities.bytesPerCall > 0)
        }
    }

    @Test(arguments: EndpointFixture.all)
    func aClockSampleComesFromTheServersReply(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let clock = ServerClock()
            try await live.client("client-a", clock: clock).sampleClock()
            #expect(clock.estimate != nil)
        }
    }

    /// An endpoint that takes files stores the bytes sent and names them in the property; one
    /// that does not says so, and no document changes.
    @Test(arguments: EndpointFixture.all)
    func aFileSentForAPropertyIsServedAtTheURLTheDocumentNames(_ fixture: EndpointFixture) async throws {
        try await with(fixture) { live in
            let a = live.client("client-a")
            _ = try await a.push([live.change("f1", #""title":"with a file""#)], pullingAfter: nil)
            let folder = try TempFolder("conformance-upload")
            defer { folder.remove() }
            let size = 300_000
            let sha = try folder.writeRandom("scan.pdf", size: size, seed: 7)
            let request = FileUploadRequest(
                path: folder.file("scan.pdf"), size: Int64(size), fileName: "scan.pdf", targetID: "f1", targetDocType: live.docType, targetProperty: "scan")
            guard a.capabilities.uploads else {
                await #expect(throws: EndpointError.self) { _ = try await a.upload(request, progress: UploadProgress()) }
                return
            }
            let progress = UploadProgress()
            let stored = try await a.upload(request, progress: progress)
            #expect(progress.sha256() == sha && progress.bytesSent == Int64(size))
            #expect(stored["title"] == "with a file", "the document's other members stay: \(stored)")
            let url = try #require(stored["scan"]?.string, "the property names the file: \(stored)")
            let served = try await APIClient(baseURL: "", token: live.credential).download(url)
            #expect(served.status == 200 && served.sha256 == sha && served.length == Int64(size), "\(url): \(served.status)")
            let (pulled, _) = try await pullAll(live.client("client-b"), after: nil)
            #expect(pulled["f1"]?["scan"]?.string == url, "another client sees the URL")
        }
    }
}
