@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// Git's children keep freed heap for their next object (fast-import's compressor state was
/// given back and taken again for every blob: 2.5 s of system time in 100,000 blobs), without
/// taking the user's own glibc tunables away.
@Suite struct GitEnvironmentTests {
    @Test func gitRunsWithATrimThresholdAndTheUsersOwnTunables() async throws {
        #expect(GitRunner.tunables(nil) == "glibc.malloc.trim_threshold=67108864")
        #expect(GitRunner.tunables("glibc.malloc.arena_max=2") == "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=67108864")
        #expect(GitRunner.tunables("glibc.malloc.trim_threshold=4096") == "glibc.malloc.trim_threshold=4096", "the user's own threshold stays")
        // What a git child sees: `git var`'s children are git itself; `sh -c` through git's alias
        // runs with the environment git was given.
        let folder = try TempFolder("git-env")
        defer { folder.remove() }
        let git = try GitRunner.find(in: folder.path)
        _ = try await git.check(["init", "-q"])
        let seen = try await git.check(["-c", "alias.env=!printenv GLIBC_TUNABLES", "env"]).text
        #expect(seen.contains("glibc.malloc.trim_threshold=67108864"), "\(seen)")
    }
}
