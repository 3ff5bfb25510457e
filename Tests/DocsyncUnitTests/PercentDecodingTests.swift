@testable import DocsyncServer
import Testing

/// Path parameters decoded by our own code (Foundation's decoder crashed under concurrent
/// requests): what a client can put in a URL path.
@Suite struct PercentDecodingTests {
    @Test(arguments: [
        ("plain", "plain"), ("my%20notes", "my notes"), ("n%31", "n1"), ("caf%C3%A9", "café"), ("%e2%9c%93", "✓"), ("100%25", "100%"),
    ])
    func escapesAreDecoded(_ pair: (String, String)) {
        #expect(ReferenceServer.percentDecoded(pair.0) == pair.1)
    }

    @Test(arguments: ["%", "%4", "%ZZ", "a%G1", "%FF", "%C3", "%ED%A0%80"])
    func malformedOrNotUTF8IsNil(_ text: String) {
        #expect(ReferenceServer.percentDecoded(text) == nil)
    }
}
