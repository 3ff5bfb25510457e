@testable import DocsyncIndex
import DocsyncTestSupport
import Synchronization
import Testing

/// The turns the folders of one process take (`AgentOptions.turns`): a permit that comes back
/// goes to who waits `ahead` before anyone `behind`, each in the order they came.
@Suite struct PermitsTests {
    @Test func aPermitGoesAheadOfTheQueueBehindAndEachQueueInOrder() async throws {
        let permits = Permits(1)
        let order = Order()
        let gate = WakeGate()
        let holder = Task { await permits.withPermit { @Sendable in await gate.wait() } }
        #expect(await eventually { permits.waiting == 0 && gate.waiters == 1 })
        var tasks: [Task<Void, Never>] = []
        for (n, (name, priority)) in [("pull1", Permits.Priority.behind), ("pull2", .behind), ("scan1", .ahead), ("scan2", .ahead)].enumerated() {
            tasks.append(Task { await permits.withPermit(priority: priority) { @Sendable in order.add(name) } })
            #expect(await eventually { permits.waiting == n + 1 })
        }
        gate.open()
        await holder.value
        for task in tasks { await task.value }
        #expect(order.names == ["scan1", "scan2", "pull1", "pull2"])
    }

    @Test func aTaskBehindDoesNotSlipPastTheQueueAheadWhenAPermitIsFree() async throws {
        let permits = Permits(2)
        let gate = WakeGate()
        let holders = (0..<2).map { _ in Task { await permits.withPermit { @Sendable in await gate.wait() } } }
        #expect(await eventually { gate.waiters == 2 })
        let order = Order()
        let scan = Task { await permits.withPermit(priority: .ahead) { @Sendable in order.add("scan") } }
        #expect(await eventually { permits.waiting == 1 })
        let pull = Task { await permits.withPermit(priority: .behind) { @Sendable in order.add("pull") } }
        #expect(await eventually { permits.waiting == 2 })
        gate.open()
        for holder in holders { await holder.value }
        await scan.value
        await pull.value
        #expect(order.names == ["scan", "pull"])
    }
}

/// The order tasks got in.
final class Order: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ name: String) { list.withLock { $0.append(name) } }
    var names: [String] { list.withLock { $0 } }
}

/// Holds tasks until opened.
final class WakeGate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    var waiters: Int { state.withLock { $0.waiting.count } }

    func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.open { return true }
                state.waiting.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.resume() }
    }
}
