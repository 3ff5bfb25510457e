@testable import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// What waits for a turn when the folders of one process take turns at heavy work.
extension MemoryEngineTests {
    /// A catch-up asks for no page ahead while the folders take turns: the next page would wait,
    /// whole, for the folder's next turn (300 folders' pages asked ahead held over 100 MiB). The
    /// test takes the only turn from the folder's first page on: no second page is asked for
    /// until the folder has its turn again, and then every document lands.
    @Test func aFolderTakingTurnsHoldsNoPageAheadWhileItWaits() async throws {
        let server = MemoryServer()
        let count = server.pageSize * 2 + 10
        for i in 0..<count { try await put(server, #"{"id":"t\#(i)","docType":"bulk","n":\#(i)}"#) }
        let turns = Permits(1)
        let (holding, held) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        server.holdNextPullReply {
            // The folder holds the only turn while its first page is fetched: the test's turn is
            // queued behind it, ahead of the folder's next catch-up.
            Task {
                await turns.withPermit(priority: .ahead) {
                    held.yield()
                    for await _ in released { break }
                }
            }
            while turns.waiting == 0 { await Task.yield() }
        }
        let folder = try TempFolder("turns-no-ahead")
        defer { folder.remove() }
        let agent = try await agent(folder, server) { $0.turns = turns }
        var iterator = holding.makeAsyncIterator()
        _ = await iterator.next()
        // The first page is written and the folder waits for its turn: no page was asked ahead.
        #expect(await !eventually(timeout: .milliseconds(500)) { server.pulls > 1 }, "\(server.pulls) pulls while the folder waited for its turn")
        release.finish()
        #expect(await eventually(timeout: Self.patience) { TreeWalkerProbe.documents(in: folder.path).count == count })
        try await agent.stop()
    }

    /// Without turns, a catch-up asks for the next page while it writes this one: the second page
    /// is asked for before the first is all in the folder (the test above's positive control;
    /// an endpoint whose pages may not be asked ahead, a plain PingPong poll, says so itself).
    @Test func aCatchUpAsksForTheNextPageWhileItWritesThisOne() async throws {
        let server = MemoryServer()
        let count = server.pageSize * 2 + 10
        for i in 0..<count { try await put(server, #"{"id":"a\#(i)","docType":"bulk","n":\#(i)}"#) }
        let folder = try TempFolder("ahead")
        defer { folder.remove() }
        let writtenWhenAsked = Mutex<Int?>(nil)
        server.holdNextPullReply {
            server.holdNextPullReply {
                writtenWhenAsked.withLock { $0 = TreeWalkerProbe.documents(in: folder.path).count }
            }
        }
        let agent = try await agent(folder, server)
        #expect(await eventually(timeout: Self.patience) { TreeWalkerProbe.documents(in: folder.path).count == count })
        let written = try #require(writtenWhenAsked.withLock { $0 })
        #expect(written < server.pageSize, "\(written) documents of the first page were in the folder when the second was asked for")
        try await agent.stop()
    }
}
