import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The reference endpoint over real HTTP on 127.0.0.1, route by route.
@Suite struct EndpointTests {
    func withServer(_ body: (TestServer) async throws -> Void) async throws {
        let server = try await TestServer.start()
        do { try await body(server) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func putUpsertsAndWrapsTheStoredDocument() async throws {
        try await withServer { server in
            let reply = try await server.api.request("PUT", "/api/document", body: #"{"id":"n1","docType":"note","big":123456789012345678901234,"x":1.50}"#)
            #expect(reply.status == 200)
            let data = try #require(reply.json?.object?["data"]?.object)
            #expect(data.keys == ["id", "docType", "big", "x", "updated_by", "updated_at", "rev"])
            #expect(data["big"] == .number("123456789012345678901234"))
            #expect(data["x"] == .number("1.50"))
            let stamp = try #require(data["updated_at"]?.string)
            #expect(stamp.hasSuffix("Z") && stamp.count == 24, "RFC 3339 UTC with milliseconds: \(stamp)")
            let again = try await server.api.request("PUT", "/api/document", body: #"{"id":"n1","docType":"note","x":2}"#)
            #expect(again.json?.object?["data"]?.object?["rev"] == .number("2"))
            #expect(again.json?.object?["data"]?.object?["big"] == nil, "PUT replaces the whole document")
        }
    }

    @Test func postCreatesWithAGeneratedIDAndRefusesAnExistingOne() async throws {
        try await withServer { server in
            let created = try await server.api.request("POST", "/api/document", body: #"{"docType":"note","t":"x"}"#)
            #expect(created.status == 201)
            let id = try #require(created.json?.object?["data"]?.object?["id"]?.string)
            #expect(DocumentRules.isSafeIdentifier(id))
            let duplicate = try await server.api.request("POST", "/api/document", body: #"{"id":"\#(id)","docType":"note"}"#)
            #expect(duplicate.status == 409)
        }
    }

    @Test func getByIDAndByType() async throws {
        try await withServer { server in
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note"}"#)
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"b","docType":"note"}"#)
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"c","docType":"task"}"#)
            let one = try await server.api.request("GET", "/api/document/a")
            #expect(one.status == 200 && one.json?.object?["data"]?.object?["id"] == "a")
            #expect(try await server.api.request("GET", "/api/document/nope").status == 404)
            let notes = try await server.api.documents(type: "note")
            #expect(Set(notes.keys) == ["a", "b"])
        }
    }

    /// More documents than one page of the store: PingPong's form streams them all in one array;
    /// `?limit=` pages through them with `next`, each document once.
    @Test func aTypeListingLargerThanAPageIsStreamedWholeOrPaged() async throws {
        try await withServer { server in
            let total = 2_345
            for start in stride(from: 0, to: total, by: 500) {
                let docs = (start..<min(total, start + 500)).map { #"{"id":"n\#($0)","docType":"note","n":\#($0)}"# }.joined(separator: ",")
                #expect(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(docs)]}"#).status == 200)
            }
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"t","docType":"task"}"#)
            _ = try await server.api.request("DELETE", "/api/document", body: #"{"id":"n7","docType":"note"}"#)
            let all = try await server.api.documents(type: "note")
            #expect(all.count == total, "one array, tombstones included")

            var seen: [String] = []
            var after: String? = ""
            var pages = 0
            while let from = after {
                let reply = try await server.api.request("GET", "/api/document/type/note?deleted=false&limit=1000&after=\(from)")
                let object = try #require(reply.json?.object)
                seen += try #require(object["data"]).arrayValue.compactMap { $0.object?["id"]?.string }
                after = object["next"]?.string
                pages += 1
            }
            #expect(pages == 3)
            #expect(seen.count == total - 1 && Set(seen).count == seen.count && !seen.contains("n7"))
            #expect(seen == seen.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }), "ordered by id")
            for bad in ["0", "-1", "10001", "x", "99999999999999999999"] {
                #expect(try await server.api.request("GET", "/api/document/type/note?limit=\(bad)").status == 400, "limit=\(bad)")
            }
        }
    }

    @Test func deleteKeepsATombstoneThatListingsCanLeaveOut() async throws {
        try await withServer { server in
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","t":1}"#)
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"b","docType":"note"}"#)
            let deleted = try await server.api.request("DELETE", "/api/document", body: #"{"id":"a","docType":"note"}"#)
            #expect(deleted.status == 200)
            let tombstone = try #require(deleted.json?.object?["data"]?.object)
            #expect(tombstone["deleted_at"]?.string != nil)
            #expect(tombstone["t"] == .number("1"), "the document is kept")
            #expect(try await server.api.documents(type: "note").count == 2)
            let live = try await server.api.request("GET", "/api/document/type/note?deleted=false")
            guard case .array(let docs)? = live.json?.object?["data"] else { Issue.record("no array"); return }
            #expect(docs.count == 1 && docs[0].object?["id"] == "b")
            #expect(try await server.api.request("DELETE", "/api/document", body: #"{"id":"zz","docType":"note"}"#).status == 404)
        }
    }

    @Test func everyRouteNeedsTheToken() async throws {
        try await withServer { server in
            let routes = [("GET", "/api/document/a", nil), ("GET", "/api/document/type/note", nil), ("GET", "/api/time", nil),
                          ("PUT", "/api/document", #"{"id":"a","docType":"n"}"#), ("POST", "/api/document", #"{"docType":"n"}"#),
                          ("DELETE", "/api/document", #"{"id":"a","docType":"n"}"#)]
            for (method, path, body) in routes {
                let missing = try await server.api.request(method, path, body: body, token: .some(nil))
                #expect(missing.status == 401, "\(method) \(path)")
                #expect(missing.json?.object?["error"]?.string?.contains("Authorization") == true)
                let wrong = try await server.api.request(method, path, body: body, token: "wrong-token")
                #expect(wrong.status == 401, "\(method) \(path)")
                #expect(wrong.json?.object?["error"] == "invalid token")
            }
            #expect(try await server.api.documents(type: "n").isEmpty, "nothing was written without a token")
        }
    }

    @Test(arguments: [
        ("PUT", #"{"id":"a"}"#, "no \"docType\""),
        ("PUT", #"{"docType":"note"}"#, "no \"id\""),
        ("POST", #"{"title":"x"}"#, "no \"docType\""),
        ("PUT", #"{"id":"../x","docType":"note"}"#, "\"id\" must be"),
        ("PUT", #"[1]"#, "must be a JSON object"),
        ("PUT", #"{"id":"a","docType":"note",}"#, "not valid JSON"),
    ])
    func badDocumentsGet400WithAClearMessage(method: String, body: String, message: String) async throws {
        try await withServer { server in
            let reply = try await server.api.request(method, "/api/document", body: body)
            #expect(reply.status == 400)
            let error = try #require(reply.json?.object?["error"]?.string)
            #expect(error.contains(message), "\(error)")
        }
    }

    @Test func staleRevisionGets409WithTheCurrentDocument() async throws {
        try await withServer { server in
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","v":1}"#)
            _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","v":2}"#)
            let stale = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","v":3}"#, headers: [("If-Match", "\"1\"")])
            #expect(stale.status == 409)
            #expect(stale.json?.object?["data"]?.object?["v"] == .number("2"))
            let fresh = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","v":3}"#, headers: [("If-Match", "\"2\"")])
            #expect(fresh.status == 200)
        }
    }

    @Test func repliesCarryTheServersClock() async throws {
        try await withServer { server in
            let reply = try await server.api.request("GET", "/api/time")
            #expect(reply.status == 200)
            let utc = try #require(reply.header("X-Sync-UTC").flatMap { Int64($0) })
            #expect(abs(utc / 1_000_000_000 - Int64(Date().timeIntervalSince1970)) < 5)
            #expect(reply.header("X-Sync-Duration").flatMap { Int64($0) } != nil)
            #expect(reply.header("Date") != nil)
            #expect(reply.json?.object?["SyncUTC"] != nil && reply.json?.object?["SyncDuration"] != nil)
            let unauthorized = try await server.api.request("GET", "/api/time", token: .some(nil))
            #expect(unauthorized.header("X-Sync-UTC") != nil, "even errors are samples")
        }
    }
}

@Suite struct BatchEndpointTests {
    @Test func syncUpsertsReportsErrorsAndReturnsOthersChangesSinceTheCursor() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"other","docType":"note","by":"someone else"}"#)
        let first = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[{"id":"a","docType":"note"},{"id":"b"},{"id":"c","docType":"note"}]}"#)
        #expect(first.status == 200)
        let reply = try #require(first.json?.object)
        let success = try #require(reply["documents"]?.object?["success"]).arrayValue.compactMap { $0.object?["id"]?.string }
        #expect(Set(success) == ["a", "c", "other"], "own writes and others' changes")
        let errors = try #require(reply["documents"]?.object?["error"]).arrayValue
        #expect(errors.count == 1 && errors[0].object?["id"] == "b")
        #expect(errors[0].object?["message"]?.string?.contains("docType") == true)
        let cursor = try #require(reply["cursor"])
        // Nothing new since: an empty answer with the same cursor.
        let again = try await server.api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[]}"#)
        #expect(try #require(again.json?.object?["documents"]?.object?["success"]).arrayValue.isEmpty)
        #expect(again.json?.object?["cursor"] == cursor)
        // A change by someone else shows up, tombstones included.
        _ = try await server.api.request("DELETE", "/api/document", body: #"{"id":"other","docType":"note"}"#)
        let later = try await server.api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[]}"#)
        let changed = try #require(later.json?.object?["documents"]?.object?["success"]).arrayValue
        #expect(changed.count == 1 && changed[0].object?["deleted_at"] != nil)
    }

    @Test func withoutEchoOwnWritesAreAcknowledgedAndOthersChangesComeWhole() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"other","docType":"note","by":"someone else"}"#)
        let reply = try await server.api.request(
            "POST", "/api/sync",
            body: #"{"since":0,"echo":false,"documents":[{"id":"a","docType":"note","text":"long"},{"id":"g","docType":"note","deleted_at":"2026-01-01T00:00:00Z"}]}"#)
        let success = try #require(reply.json?.object?["documents"]?.object?["success"]).arrayValue.compactMap(\.object)
        let byID = Dictionary(uniqueKeysWithValues: success.map { ($0["id"]!.string!, $0) })
        #expect(byID["a"]?.keys.sorted() == ["id", "rev", "updated_at"], "an acknowledgement, not the document")
        #expect(byID["a"]?["rev"] == .number("1"))
        #expect(byID["g"]?["deleted_at"]?.string == "2026-01-01T00:00:00.000Z")
        #expect(byID["other"]?["by"] == "someone else")
        let stored = try await server.api.documents(type: "note")
        #expect(stored["a"]?["text"] == "long")
    }

    @Test func aStaleRevisionInABatchIsAConflictWithTheCurrentDocument() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","v":1}"#)
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"note","v":2}"#)
        let reply = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[{"id":"a","docType":"note","v":3,"rev":1}]}"#)
        let error = try #require(reply.json?.object?["documents"]?.object?["error"]).arrayValue.first?.object
        #expect(error?["message"]?.string?.hasPrefix("revision 1 is not current") == true)
        #expect(error?["current"]?.object?["v"] == .number("2"))
    }

    @Test func aLongPollReturnsAsSoonAsSomethingChanges() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let cursor = try #require(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#).json?.object?["cursor"])
        let started = ContinuousClock.now
        async let held = server.api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[],"wait":20}"#)
        try await Task.sleep(for: .milliseconds(300))
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"late","docType":"note"}"#)
        let reply = try await held
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(try #require(reply.json?.object?["documents"]?.object?["success"]).arrayValue.first?.object?["id"] == "late")
    }

    /// Regression: a write through the batch call woke the held polls with the writer's cursor,
    /// which is short of the write while more changes wait for the writer (a writer far behind,
    /// or asking for small pages): the polls slept on to their deadline, up to 25 s.
    @Test func aWriteFromAWriterFarBehindWakesTheHeldPolls() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for id in ["a", "b", "c"] { _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"\#(id)","docType":"note"}"#) }
        let cursor = try #require(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#).json?.object?["cursor"])
        let started = ContinuousClock.now
        async let held = server.api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[],"wait":20}"#)
        try await Task.sleep(for: .milliseconds(300))  // the poll is held by now
        let behind = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"limit":1,"documents":[{"id":"late","docType":"note"}]}"#)
        #expect(behind.json?.object?["more"] == .bool(true), "the writer is behind: \(behind.text)")
        let reply = try await held
        #expect(ContinuousClock.now - started < .seconds(10), "woken by the write, not by the poll's deadline")
        #expect(try #require(reply.json?.object?["documents"]?.object?["success"]).arrayValue.first?.object?["id"] == "late")
    }

    /// A change the caller is not sent (another docType here; its own write alike) wakes the held
    /// poll too, which then waits on: it used to return at once, empty, and 60 agents on a busy
    /// server each polled again and again, then backed off for seconds with others' edits waiting.
    @Test func aLongPollWokenByAChangeItIsNotSentWaitsOnForOneItIs() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let cursor = try #require(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#).json?.object?["cursor"])
        async let held = server.api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[],"wait":20,"types":["note"]}"#)
        try await Task.sleep(for: .milliseconds(300))  // the poll is held by now
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"elsewhere","docType":"other"}"#)
        try await Task.sleep(for: .milliseconds(300))
        _ = try await server.api.request("PUT", "/api/document", body: #"{"id":"mine","docType":"note"}"#)
        let reply = try await held
        let ids = try #require(reply.json?.object?["documents"]?.object?["success"]).arrayValue.compactMap { $0.object?["id"]?.string }
        #expect(ids == ["mine"], "\(reply.text)")
    }
}

extension JSONValue {
    var arrayValue: [JSONValue] { if case .array(let a) = self { a } else { [] } }
}
