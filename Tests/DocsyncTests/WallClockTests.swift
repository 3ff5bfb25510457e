import DocsyncAgent
import DocsyncClock
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// The kernel's clocks with the wall clock moved by hand: boot time true, wall time off by
/// `offset`, which a test steps.
final class SteppedWallSeam: ClockSeam {
    let offset = Mutex<Int64>(0)
    func bootNanoseconds() -> Int64 { SystemClockSeam().bootNanoseconds() }
    func wallNanoseconds() -> Int64 { SystemClockSeam().wallNanoseconds() + offset.withLock { $0 } }
}

/// A device whose wall clock is hours off, or stepped while the endpoint is away (issue 21,
/// finding 7). The report ran `docsync watch` under `FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f
/// +3h`: the agent calibrated, then never pushed or pulled again once the server had been away.
/// That part is libfaketime's: under it a plain `DispatchQueue.asyncAfter(deadline: .now() + 0.3)`
/// never fires (libdispatch's timers hang), so every retry wait of the agent hangs with it. These
/// tests put the wrong wall clock in through the clock seam instead, where it is the agent's own
/// behaviour that is measured; retry deadlines are on the boot clock (``RetryPolicy/deadlineNow()``).
extension HeavySuites {
@Suite(.serialized) struct WallClockTests {
    @Test(arguments: [Int64(3 * 3_600_000_000_000), Int64(-3 * 3_600_000_000_000)])
    func aWallClockHoursOffChangesNothingWhenTheEndpointComesBack(offset: Int64) async throws {
        let server = try await TestServer.start()
        let proxy = FaultProxy(upstream: server.url)
        try await proxy.start()
        let folder = try TempFolder("wall-off")
        defer { folder.remove() }
        let seam = SteppedWallSeam()
        seam.offset.withLock { $0 = offset }
        let agent = try await TestAgent.start(folder: folder, endpoint: proxy.url, token: server.token, clock: ServerClock(seam: seam))
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["a"] != nil })
        // The endpoint goes away for a few seconds; meanwhile the wall clock is stepped back to true.
        proxy.setRule { _, _ in .status(503, message: "away") }
        try folder.write("notes/b.json", #"{"id":"b","docType":"note"}"#)
        try folder.write("notes/c.json", #"{"id":"c","docType":"note"}"#)
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.offlineSince != nil })
        seam.offset.withLock { $0 = 0 }
        try await Task.sleep(for: .seconds(2))  // the outage itself: what is measured is the recovery after it
        proxy.setRule(nil)
        let back = ContinuousClock.now
        #expect(await eventually(timeout: .seconds(5)) { (try? await server.api.documents(type: "note"))?.count == 3 })
        #expect(ContinuousClock.now - back < .seconds(5))
        // Pulls go on too: another client's document arrives.
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"d","docType":"note"}"#).status == 200)
        #expect(await eventually(timeout: .seconds(5)) { folder.exists("note/d.json") })
        try await agent.stop()
        await proxy.stop()
        await server.stop()
    }
}
}
