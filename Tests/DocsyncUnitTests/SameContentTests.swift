import DocsyncModel
import Testing

/// Content compared as a server that stores parsed JSON gives it back.
@Suite struct SameContentTests {
    func same(_ a: String, _ b: String) throws -> Bool { try JSONParser.parse(a).sameContent(as: JSONParser.parse(b)) }

    @Test(arguments: [
        (#"{"a":1.50,"b":[1,{"c":true}]}"#, #"{"b":[1,{"c":true}],"a":1.5}"#),
        (#"{"n":100}"#, #"{"n":1e2}"#),
        (#"{"n":0.0}"#, #"{"n":-0}"#),
        (#"{"n":12345678901234567890123}"#, #"{"n":12345678901234567890123.0}"#),
        (#"{"n":1E-3}"#, #"{"n":0.001}"#),
    ])
    func theSameContentInAnotherText(_ pair: (String, String)) throws {
        #expect(try same(pair.0, pair.1))
    }

    @Test(arguments: [
        (#"{"a":1}"#, #"{"a":1,"b":null}"#),
        (#"{"n":12345678901234567890123}"#, #"{"n":12345678901234567890124}"#),
        (#"{"a":[1,2]}"#, #"{"a":[2,1]}"#),
        (#"{"n":1}"#, #"{"n":"1"}"#),
        (#"{"n":1e999999999}"#, #"{"n":1e999999998}"#),
    ])
    func differentContent(_ pair: (String, String)) throws {
        #expect(try !same(pair.0, pair.1))
    }
}
