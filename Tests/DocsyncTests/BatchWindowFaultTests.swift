@testable import DocsyncAgent
import DocsyncTestSupport
import Foundation
import Testing
import Synchronization

/// Batch calls as a sliding window, against an endpoint (a real HTTP proxy on loopback in front of
/// the reference endpoint) where one call is stuck for minutes: nothing else waits for it.
@Suite struct BatchWindowFaultTests {
    /// Batch calls go out as a sliding window: while one call is stuck, the calls after it are
    /// sent and stored (a round of calls waiting for its slowest would hold back all but three),
    /// however many calls that takes: saves made one at a time afterwards each go out in a call of
    /// their own, more calls than the window sends before it reads the outbox from its start again.
    @Test func aSlowBatchCallDoesNotHoldBackTheOnesAfterIt() async throws {
        // The request timeout outlasts the stall, and the agent's client waits as long for a
        // reply's first byte (its own read timeout, 60 s, resent the stuck call on a loaded CI
        // machine, and the resend stored all 3,000 before the test saw the rest stored).
        let rig = try await FaultTests.Rig.start(requestTimeout: .seconds(400), batch: true)
        let stalled = Mutex<Int?>(nil)
        rig.proxy.setRule { _, body in
            stalled.withLock { count in
                guard count == nil else { return .pass }
                count = body.components(separatedBy: #""docType":"note""#).count - 1
                return .stall(.seconds(300))  // until `endStalls` below
            }
        }
        let total = 3_000
        try writeNotes(rig.folder, total)
        let heldBack = try #require(await eventually(timeout: .seconds(10)) { stalled.withLock { $0 } != nil } ? stalled.withLock { $0 } : nil)
        #expect(heldBack > 0 && heldBack <= 500)
        let stalledAt = ContinuousClock.now
        // 3,000 files scanned and pushed by a debug build take 3-5 s alone; beside the CI's
        // checks and the parallel suites, over 15 s (once over 60 s). The call is stuck for 300 s.
        await expectAllStoredBut(heldBack, of: total, in: rig, within: .seconds(150))
        let callsBefore = rig.proxy.requests.filter { $0.path == "/api/sync" }.count
        var savedOneByOne = 0
        for i in 0..<(Pusher.windowBatches + 6) {
            try rig.folder.write("notes/later\(i).json", #"{"id":"later\#(i)","docType":"note"}"#)
            // A save is stored in tens of milliseconds; 20 s leaves room for a loaded machine
            // (beside a CPU hog one took over 5 s), which the call stuck for 300 s does not need.
            guard await eventually(timeout: .seconds(20), every: .milliseconds(5), {
                (try? await rig.server.api.request("GET", "/api/document/later\(i)"))?.status == 200
            }) else { break }
            savedOneByOne += 1
        }
        #expect(savedOneByOne == Pusher.windowBatches + 6, "saves after the stuck call are stored one by one; \(rig.agent.logs.warnings)")
        #expect(rig.proxy.requests.filter { $0.path == "/api/sync" }.count - callsBefore > Pusher.windowBatches)
        #expect(ContinuousClock.now - stalledAt < .seconds(300), "all of it while the call was stuck")
        rig.proxy.endStalls()
        #expect(await rig.matches())
        await rig.finish()
    }

    /// Regression: a call the endpoint failed (a 503 from a busy server) stopped the window until
    /// every call in flight was answered, the stuck one too: every save waited for it, up to the
    /// request timeout. The failed call's documents go again after the backoff, the calls after
    /// them meanwhile, and the status does not stay "offline" while documents are being stored.
    @Test func aCallFailedWhileAnotherIsStuckDoesNotWaitForIt() async throws {
        let rig = try await FaultTests.Rig.start(requestTimeout: .seconds(400), batch: true)
        let calls = Mutex(0)
        let stalled = Mutex<Int?>(nil)
        rig.proxy.setRule { _, body in
            switch calls.withLock({ $0 += 1; return $0 }) {
            case 1:
                stalled.withLock { $0 = body.components(separatedBy: #""docType":"note""#).count - 1 }
                return .stall(.seconds(300))  // until `endStalls` below
            case 2: return .status(503, message: "the server is busy", retryAfter: 1)
            default: return .pass
            }
        }
        let total = 2_000
        try writeNotes(rig.folder, total)
        let heldBack = try #require(await eventually(timeout: .seconds(10)) { stalled.withLock { $0 } != nil } ? stalled.withLock { $0 } : nil)
        let stalledAt = ContinuousClock.now
        #expect(await eventually(timeout: .seconds(120)) { rig.proxy.requests.contains { $0.fault == .status(503, message: "the server is busy", retryAfter: 1) } })
        await expectAllStoredBut(heldBack, of: total, in: rig, within: .seconds(120))
        #expect(await eventually { (try? await AgentStatus.read(root: rig.folder.path))?.offlineSince == nil }, "not offline")
        #expect(ContinuousClock.now - stalledAt < .seconds(300), "all of it while the call was stuck")
        rig.proxy.endStalls()
        #expect(await rig.matches())
        await rig.finish()
    }

    /// Everything but the stuck call's `heldBack` documents is stored on the server while it is
    /// stuck, within `limit`.
    func expectAllStoredBut(_ heldBack: Int, of total: Int, in rig: FaultTests.Rig, within limit: Duration) async {
        let stored = Mutex(0)
        #expect(await eventually(timeout: limit, every: .milliseconds(200)) {
            let count = (try? await rig.server.api.documents(type: "note").count) ?? 0
            stored.withLock { $0 = count }
            return count == total - heldBack
        }, "everything but the stuck call's \(heldBack) documents is stored while it is stuck: \(stored.withLock { $0 }) of \(total); \(rig.agent.logs.warnings)")
    }

    func writeNotes(_ folder: TempFolder, _ count: Int) throws {
        for i in 0..<count { try folder.write("notes/n\(i).json", #"{"id":"n\#(i)","docType":"note","i":\#(i)}"#) }
    }
}
