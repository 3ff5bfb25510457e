@testable import DocsyncGit
import Foundation
import Testing

/// The filter an index patch asks before it looks an entry's path up (`PathFilter`): at every
/// commit it is asked once for each of the index's entries, so it must say "no" for nearly all
/// of them, whatever the names look like, and never for a path it holds.
@Suite struct PathFilterTests {
    /// Paths of one length that end alike, as a folder of generated names has them.
    static let numbered = (0..<100_000).map { Array(String(format: "records/r%05d.json", $0).utf8) }

    @Test(arguments: [1, 10, 1_000])
    func pathsOfOneLengthThatEndAlikeAreToldApart(held: Int) {
        let wanted = (0..<held).map { Self.numbered[$0 * 97 % Self.numbered.count] }
        let filter = PathFilter(wanted)
        #expect(wanted.allSatisfy { filter.mayHold($0[...]) })
        let passed = Self.numbered.filter { filter.mayHold($0[...]) }.count - held
        // One bit of 64 per path held: about 1.6 % of the rest pass. A mix that leaves the
        // tail's high bytes out of the bits taken passes all of them.
        #expect(passed < Self.numbered.count * 3 / 100, "\(passed) of \(Self.numbered.count) paths passed a filter of \(held)")
    }

    @Test func anyPathLengthAndAnyByteGiveAFingerprint() {
        let strange: [[UInt8]] = [[], [0], [0xFF], Array(repeating: 0xFF, count: 8), Array(repeating: 0, count: 5_000), Array("é/ü.json".utf8)]
        let filter = PathFilter(strange)
        #expect(strange.allSatisfy { filter.mayHold($0[...]) })
        #expect(PathFilter([]).mayHold([1, 2, 3][...]) == false)
    }
}
