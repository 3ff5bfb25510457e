import DocsyncModel
import DocsyncServer
import DocsyncTestSupport
import Foundation
import Testing

/// The API's description (docs/openapi.yaml, served at `/api/openapi.json`): served without a
/// token, and complete: every route the server answers is in it, and nothing is described that
/// the server does not answer. (That it is valid OpenAPI and that the server keeps to it are
/// checked by openapi-spec-validator and schemathesis in `.ci/run`: scripts/fuzz-api.sh.)
@Suite struct APIDescriptionTests {
    /// The operations the served description holds, as `METHOD /path/{parameter}`.
    static func describedOperations(_ description: JSONObject) -> Set<String> {
        var operations = Set<String>()
        for (path, item) in description["paths"]?.object?.members ?? [] {
            for (method, _) in item.object?.members ?? [] where ["get", "put", "post", "delete", "patch", "head", "options"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test func everyRouteTheServerAnswersIsDescribedAndNothingElse() async throws {
        let server = try await TestServer.start(configure: { $0.metricsText = { .init(string: "# metrics\n") } })
        defer { Task { await server.stop() } }
        let reply = try await server.api.request("GET", "/api/openapi.json", token: .some(nil))
        #expect(reply.status == 200, "the description needs no token: \(reply.text)")
        let description = try #require(reply.json?.object, "the description is JSON: \(reply.text.prefix(200))")
        #expect(description["openapi"]?.string == "3.1.0")

        let data = try TempFolder("api-routes")
        defer { data.remove() }
        var configuration = ReferenceServer.Configuration(port: 0, dataDirectory: data.path, token: "t")
        configuration.metricsText = { .init(string: "") }
        let routes = Set(try ReferenceServer(configuration: configuration).routes())
        #expect(routes.count >= 12, "\(routes.sorted())")
        let described = Self.describedOperations(description)
        #expect(routes.subtracting(described).isEmpty, "routes the description lacks: \(routes.subtracting(described).sorted())")
        #expect(described.subtracting(routes).isEmpty, "described but not served: \(described.subtracting(routes).sorted())")
    }

    /// Only the description is open: the route next to it still wants a token, and a token is
    /// not needed to read the description but does no harm either.
    @Test func theDescriptionIsTheOnlyRouteWithoutAToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        #expect(try await server.api.request("GET", "/api/openapi.json").status == 200)
        #expect(try await server.api.request("GET", "/api/openapi.json", token: .some("wrong")).status == 200)
        for path in ["/api/stats", "/api/time", "/api/openapi.json/", "/api/openapi.jsonx", "/api/document/type/note"] {
            #expect(try await server.api.request("GET", path, token: .some(nil)).status == 401, "\(path)")
        }
        #expect(try await server.api.request("POST", "/api/openapi.json", body: "{}", token: .some(nil)).status == 401)
    }

    // What the fuzzer found (scripts/fuzz-api.sh), one test each.

    /// A method a path is not served with is 405 naming the ones it is (was 404, as for a path
    /// that does not exist); a path that does not exist stays 404, and no token stays 401.
    @Test func anotherMethodOnAKnownPathIs405WithAllow() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for (method, path, allowed) in [
            ("TRACE", "/api/document", "DELETE, POST, PUT"), ("PATCH", "/api/document", "DELETE, POST, PUT"), ("GET", "/api/sync", "POST"),
            ("DELETE", "/api/document/n1", "GET"), ("PUT", "/api/stats", "GET"), ("POST", "/api/app/upload/\(String(repeating: "a", count: 64))", "GET"),
        ] {
            let reply = try await server.api.request(method, path)
            #expect(reply.status == 405, "\(method) \(path): \(reply.status) \(reply.text)")
            #expect(reply.header("Allow") == allowed, "\(method) \(path)")
            #expect(reply.json?.object?["error"]?.string?.contains(method) == true)
        }
        #expect(try await server.api.request("GET", "/api/nothing/here").status == 404)
        #expect(try await server.api.request("TRACE", "/api/document", token: .some(nil)).status == 401)
    }

    /// The batch call's `echo` and `wait` of another type than the description's were taken for
    /// defaults (`"wait": {}` held nothing, `"echo": "no"` echoed); now they are 400. `null` is
    /// still "not given", and a wait over the server's ceiling is held for the ceiling.
    @Test func theBatchCallRefusesEchoAndWaitOfAnotherType() async throws {
        let server = try await TestServer.start(configure: { $0.maxWait = .seconds(1) })
        defer { Task { await server.stop() } }
        for body in [#"{"wait": {}}"#, #"{"wait": "5"}"#, #"{"wait": -1}"#, #"{"wait": true}"#, #"{"echo": "no"}"#, #"{"echo": 0}"#] {
            let reply = try await server.api.request("POST", "/api/sync", body: body)
            #expect(reply.status == 400, "\(body): \(reply.status) \(reply.text)")
        }
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"wait": null, "echo": null}"#).status == 200)
        let began = ContinuousClock.now
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"since": 999999, "wait": 3600}"#).status == 200)
        #expect(ContinuousClock.now - began < .seconds(30), "held for the server's ceiling (--max-wait), not an hour")
    }

    /// A DELETE naming an id or a docType no document can have is 400, as PUT's is (it was 404,
    /// which the fuzzer's stateful run took for a document it had made and lost).
    @Test func aDeletionOfAMalformedIdOrDocTypeIs400() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for body in [#"{"id":"À\u001f","docType":"note"}"#, #"{"id":"-x","docType":"note"}"#, #"{"id":"ok","docType":"a/b"}"#, #"{"id":"ok","docType":""}"#] {
            let reply = try await server.api.request("DELETE", "/api/document", body: body)
            #expect(reply.status == 400, "\(body): \(reply.status) \(reply.text)")
        }
        #expect(try await server.api.request("DELETE", "/api/document", body: #"{"id":"absent","docType":"note"}"#).status == 404)
    }
}
