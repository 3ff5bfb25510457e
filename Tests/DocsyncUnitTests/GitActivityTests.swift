@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// What the look for the user's git commands reads in `/proc`: a process started a moment ago
/// is young (a shell's child may be about to become git), one started long ago is not, and a
/// `git` working in the tree is seen.
@Suite struct GitActivityTests {
    @Test func aProcessJustStartedIsYoungAndOneStartedLongAgoIsNot() async throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["5"]
        try child.run()
        defer { child.terminate() }
        let now = try #require(GitActivity.uptimeMilliseconds())
        #expect(GitActivity.isYoung(child.processIdentifier, now: now))
        #expect(!GitActivity.isYoung(child.processIdentifier, now: now + GitActivity.youngMilliseconds + 1_000))
        #expect(!GitActivity.isYoung(1, now: now), "init started at boot")
    }

    @Test func aGitCommandInTheTreeIsSeenAndNoneOutsideIt() async throws {
        let tree = try TempFolder("activity")
        defer { tree.remove() }
        #expect(!GitActivity.running(in: tree.path))
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        // `git -C TREE` reading its standard input for as long as the test needs.
        git.arguments = ["-C", tree.path, "hash-object", "--stdin"]
        let input = Pipe()
        git.standardInput = input
        try git.run()
        defer { try? input.fileHandleForWriting.close() }
        #expect(GitActivity.running(in: tree.path))
        #expect(!GitActivity.running(in: tree.path + "-other"))
    }
}
