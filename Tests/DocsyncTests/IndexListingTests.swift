@testable import DocsyncGit
import Testing

/// The entries a commit asks for are picked out of `ls-files -s -z` as it comes, in chunks cut
/// anywhere: the same entries, wherever the cuts fall.
@Suite struct IndexListingTests {
    let listing: [UInt8] = Array(
        ("100644 \(String(repeating: "a", count: 40)) 0\tnotes/a.json\0"
            + "100644 \(String(repeating: "b", count: 40)) 1\tnotes/b.json\0"  // a conflict's stage: not kept
            + "100755 \(String(repeating: "c", count: 40)) 0\tnotes/tab\there.json\0"
            + "100644 \(String(repeating: "d", count: 40)) 0\tnotes/é.json\0"
            + "100644 \(String(repeating: "e", count: 40)) 0\tother.json\0").utf8)
    let wanted: Set<String> = ["notes/a.json", "notes/b.json", "notes/tab\there.json", "notes/é.json"]
    let expected = [
        "notes/a.json": "100644 \(String(repeating: "a", count: 40))",
        "notes/tab\there.json": "100755 \(String(repeating: "c", count: 40))",
        "notes/é.json": "100644 \(String(repeating: "d", count: 40))",
    ]

    @Test func theEntriesAreTheSameWhereverTheChunksAreCut() {
        for size in 1...listing.count {
            let picked = IndexListing(wanted)
            for start in stride(from: 0, to: listing.count, by: size) {
                picked.take(listing[start..<min(start + size, listing.count)])
            }
            #expect(picked.found == expected, "chunks of \(size)")
        }
        let cutOnce = IndexListing(wanted)
        cutOnce.take(listing[..<37])
        cutOnce.take(listing[37...])
        #expect(cutOnce.found == expected)
    }
}
