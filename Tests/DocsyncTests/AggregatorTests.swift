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

    @Test func aFinishedSaveIsDueAtOnce() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 100 * ms)
        a.add("notes/4913", finished: true, at: 1 * ms)  // vim's probe, written
        a.add("notes/4913", finished: true, at: 1 * ms)  // and deleted: not a document
        a.add("notes/a.json", finished: true, at: 2 * ms)
        #expect(a.deadline == 2 * ms, "no quiet period to wait for")
        #expect(a.due(now: 2 * ms)?.paths == ["notes/4913", "notes/a.json"])
    }

    /// vim's save renames the document to a backup before it writes the new one: until the new
    /// one is written, the batch waits as long as any other would.
    @Test func aDocumentMovedAwayHoldsTheBatchUntilItIsWrittenAgain() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 100 * ms)
        a.add("notes/a.json", at: 0)
        a.add("notes/b.json", finished: true, at: 1 * ms)
        #expect(a.deadline == 6 * ms, "a.json may be half-way through a save")
        #expect(a.due(now: 2 * ms) == nil)
        a.add("notes/a.json", finished: true, at: 3 * ms)
        #expect(a.deadline == 3 * ms)
        #expect(a.due(now: 3 * ms)?.paths == ["notes/a.json", "notes/b.json"])
        a.add("notes/c.json", finished: true, at: 4 * ms)
        #expect(a.deadline == 4 * ms, "what held the last batch does not hold the next")
    }

    @Test func foldersOverflowsAndLargeBatchesWaitForTheQuietPeriod() {
        var a = EventAggregator(settleNanoseconds: 5 * ms, maxDelayNanoseconds: 100 * ms)
        a.add("archive", at: 0)  // a folder's event: its files may still be arriving
        a.add("archive/a.json", finished: true, at: 0)
        #expect(a.deadline == 5 * ms)
        _ = a.due(now: 5 * ms)
        a.addOverflow(at: 10 * ms)
        a.add("a.json", finished: true, at: 10 * ms)
        #expect(a.deadline == 15 * ms)
        _ = a.due(now: 15 * ms)
        for i in 0...EventAggregator.quickPaths { a.add("f\(i).json", finished: true, at: 20 * ms) }
        #expect(a.deadline == 25 * ms, "a checkout's files keep coalescing")
    }
}
