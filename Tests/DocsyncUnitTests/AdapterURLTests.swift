import DocsyncHTTP
import DocsyncKinto
import DocsyncPingPong
import DocsyncSyncRails
import Testing

/// Each adapter reads its own `--endpoint` URL form (the CLI only holds the list): a URL of
/// another scheme is not its; one of its scheme that it cannot read is refused with the reason.
@Suite struct AdapterURLTests {
    @Test func pingPongTakesOneOrSeveralHTTPBases() throws {
        #expect(try PingPongAdapter.choose("http://a:1,https://b")?.bases == ["http://a:1", "https://b"])
        #expect(try PingPongAdapter.choose("kinto+http://a/v1/buckets/b") == nil)
        #expect(throws: EndpointURLError.self) { try PingPongAdapter.choose("http://a,ftp://b") }
    }

    @Test func syncRailsTakesItsPathAndResource() throws {
        let adapter = try #require(try SyncRailsAdapter.choose("syncrails+http://[::1]:8080/v2/sync?resource=tasks"))
        #expect(adapter.origin == "http://[::1]:8080" && adapter.path == "/v2/sync" && adapter.resource == "tasks")
        #expect(try SyncRailsAdapter.choose("syncrails+https://h")?.path == "/api/sync")
        #expect(try SyncRailsAdapter.choose("syncrails+https://h")?.resource == "events")
        #expect(throws: EndpointURLError.self) { try SyncRailsAdapter.choose("syncrails+http://h/api/sync?resource=a/b") }
        #expect(try SyncRailsAdapter.choose("http://h") == nil)
    }

    @Test func kintoTakesItsAPIRootAndBucket() throws {
        let adapter = try #require(try KintoAdapter.choose("kinto+http://h:8888/v1/buckets/records/"))
        #expect(adapter.api == "http://h:8888/v1" && adapter.bucket == "records")
        #expect(throws: EndpointURLError.self) { try KintoAdapter.choose("kinto+http://h:8888/v1") }
        #expect(throws: EndpointURLError.self) { try KintoAdapter.choose("kinto+http://h/v1/buckets/../x") }
        #expect(try KintoAdapter.choose("https://h/v1/buckets/b") == nil)
    }
}
