@testable import DocsyncGit
import Foundation
import Testing

/// A child talked to as it runs (the build's `cat-file`, a `hash-object` fed a tree as it is
/// merged): its lines and bytes come as written, wherever the reads cut them, and a child that
/// stops or is dropped never leaves the agent stuck or a process behind.
@Suite struct ChildSessionTests {
    var cat: String { ["/usr/bin/cat", "/bin/cat"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/bin/cat" }

    @Test func linesAndBytesComeAsTheChildWroteThem() throws {
        let child = try ChildSession(cat, [], environment: [:])
        for n in 0..<100 {
            #expect(child.write(Array("line \(n)\n".utf8)[...]))
            #expect(child.readLine().map { String(decoding: $0, as: UTF8.self) } == "line \(n)")
        }
        // More than the buffer and the socket hold at once, read back as it is written.
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var back: [UInt8] = []
        var largest = 0
        for start in stride(from: 0, to: big.count, by: 10_000) {
            #expect(child.write(big[start..<min(start + 10_000, big.count)]))
            #expect(try child.read(min(10_000, big.count - start)) { piece in
                back += piece
                largest = max(largest, piece.count)
            })
        }
        #expect(back == big)
        #expect(largest <= 64 << 10)
        #expect(child.write(Array("last\nwords".utf8)[...]))
        #expect(child.readLine() == Array("last".utf8))
        let done = child.finish()
        #expect(done.status == 0)
        #expect(done.stdout == Array("words".utf8), "what was left unread comes with the end")
    }

    /// A line longer than the buffer is not a line of git's plumbing: no line, rather than memory
    /// without end.
    @Test func aLineLongerThanTheBufferIsNone() throws {
        let child = try ChildSession(cat, [], environment: [:])
        #expect(child.write([UInt8](repeating: UInt8(ascii: "y"), count: 64 << 10)[...]))
        #expect(child.readLine() == nil)
        _ = child.finish()
    }

    /// A child that ends early: its output ends, writes to it fail, and its status says so.
    @Test func aChildThatEndsEarlyIsSeenToEnd() throws {
        let child = try ChildSession("/bin/sh", ["-c", "echo one; exit 3"], environment: [:])
        #expect(child.readLine() == Array("one".utf8))
        #expect(child.readLine() == nil)
        var wrote = true
        for _ in 0..<64 where wrote { wrote = child.write([UInt8](repeating: 0, count: 64 << 10)[...]) }
        #expect(!wrote, "the socket refuses what nobody will read")
        #expect(try child.read(10) { _ in } == false)
        #expect(child.finish().status == 3)
        #expect(child.finish().status == 3, "a second finish says the same, and closes nothing twice")
        #expect(child.readLine() == nil && !child.write([1][...]), "nothing is read or written after the end")
    }

    /// A session dropped without finishing (a step that threw) kills its child and reaps it.
    @Test func aSessionDroppedKillsItsChild() throws {
        var pid: pid_t = 0
        do {
            let child = try ChildSession("/bin/sh", ["-c", "echo $$; exec sleep 600"], environment: [:])
            pid = try #require(child.readLine().flatMap { pid_t(String(decoding: $0, as: UTF8.self)) })
            #expect(kill(pid, 0) == 0)
        }
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the child is gone and reaped")
    }
}
