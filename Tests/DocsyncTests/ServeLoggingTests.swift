import DocsyncTestSupport
import Foundation
import Testing

/// Regression: `serve` ignored `DOCSYNC_LOG_LEVEL`, which `up`, `watch` and `sync` read: its
/// logging is now set up by the same options.
extension HeavySuites {
@Suite(.serialized) struct ServeLoggingTests {
    @Test func serveReadsTheLogLevelFromTheEnvironmentAsTheOtherCommandsDo() async throws {
        let work = try TempFolder("serve-logging")
        defer { work.remove() }
        func notices(_ environment: [String: String], _ name: String) async throws -> Bool {
            let server = try DocsyncProcess(
                ["serve", "--data", work.file("data-\(name)"), "--port", "0"], environment: environment, logDirectory: work.path, name: name)
            _ = try await server.firstLine()
            await server.stop()
            return server.stderr.contains("no token given")
        }
        #expect(try await notices([:], "default"), "said at the default level (notice)")
        #expect(try await !notices(["DOCSYNC_LOG_LEVEL": "error"], "quiet"), "not said at error")
    }
}
}
