import DocsyncFiles
import DocsyncWatcher
import Testing

/// The coalescing state machine, driven by a clock the test steps.
@Suite struct AggregatorTests {
    let ms: Int64 = 1_000_000

    @Test func aQuietPeriodClosesTheBatch() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 100 * ms)
        #expect(a.deadline == nil, "nothing pending: sleep indefinitely")
        a.add("x.json", at: 0)
        a.add("x.json", at: 1 * ms)
        a.add("y.json", at: 2 * ms)
        #expect(a.due(now: 6 * ms) == nil)
        #expect(a.deadline == 7 * ms)
        #expect(a.due(now: 7 * ms)?.paths == ["x.json", "y.json"])
        #expect(a.deadline == nil)
    }

    @Test func aSteadyStreamIsCutAtTheMaximumDelay() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 20 * ms)
        for t in stride(from: Int64(0), to: 30 * ms, by: Int64.Stride(2 * ms)) {
            a.add("f\(t).json", at: t)
            if t == 20 * ms { #expect(a.due(now: t)?.paths.count == 11) }
        }
    }

    @Test func attributeChangesAreKeptApartFromContentChanges() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 20 * ms)
        a.add("a.json", attributeOnly: true, at: 0)
        a.add("b.json", at: 0)
        a.add("b.json", attributeOnly: true, at: 0)
        let batch = a.due(now: 5 * ms)
        #expect(batch?.attributeOnly == ["a.json"])
        #expect(batch?.paths == ["b.json"])
    }

    @Test func overflowIsCarriedInTheBatch() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 20 * ms)
        a.addOverflow(at: 0)
        #expect(a.due(now: 5 * ms)?.overflow == true)
    }
}
