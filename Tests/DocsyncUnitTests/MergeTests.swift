@testable import DocsyncModel
import Testing

@Suite struct MergeTests {
    func parse(_ s: String) -> JSONValue { try! JSONParser.parse(s) }

    @Test func differentFieldsMergeSilently() {
        let r = Merge.threeWay(base: parse(#"{"a":1,"b":1,"c":{"x":1,"y":1}}"#),
                               local: parse(#"{"a":2,"b":1,"c":{"x":2,"y":1}}"#),
                               remote: parse(#"{"a":1,"b":3,"c":{"x":1,"y":3},"d":4}"#), preferLocal: false)
        #expect(r.conflicts.isEmpty)
        #expect(r.value == parse(#"{"a":2,"b":3,"c":{"x":2,"y":3},"d":4}"#))
    }

    /// An object of 300,000 members, well within what a document may hold (2^20 values): each
    /// member was looked up by reading the members in turn, so a merge, a comparison or a
    /// re-layout of it was some 10^11 steps, hours in which the agent applied nothing else.
    @Test(.timeLimit(.minutes(1))) func objectsOfManyMembersMergeCompareAndKeepTheirOrder() {
        let n = 300_000
        let base = JSONObject((0..<n).map { (key: "k\($0)", value: JSONValue.number("0")) })
        var local = base, remote = base
        local["k7"] = .number("1")
        remote["k\(n - 1)"] = .number("2")
        remote["new"] = .bool(true)
        let merged = Merge.threeWay(base: .object(base), local: .object(local), remote: .object(remote), preferLocal: false)
        #expect(merged.conflicts.isEmpty)
        #expect(merged.value?.object?.count == n + 1 && merged.value?.object?["k7"] == .number("1") && merged.value?.object?["k\(n - 1)"] == .number("2"))
        let reversed = JSONObject(local.members.reversed())
        #expect(JSONValue.object(reversed).sameContent(as: .object(local)) && !JSONValue.object(reversed).sameContent(as: .object(base)))
        let laidOut = Merge.keepingOrder(of: .object(reversed), .object(remote))
        #expect(laidOut.object?.keys.first == "k\(n - 1)" && laidOut.object?.keys.last == "new" && laidOut.object?.count == n + 1)
    }

    @Test func sameFieldGoesToThePreferredSideAndIsReported() {
        let base = parse(#"{"t":"base","n":1}"#), local = parse(#"{"t":"mine","n":1}"#), remote = parse(#"{"t":"theirs","n":2}"#)
        let theirs = Merge.threeWay(base: base, local: local, remote: remote, preferLocal: false)
        #expect(theirs.conflicts == ["/t"])
        #expect(theirs.value == parse(#"{"t":"theirs","n":2}"#))
        #expect(Merge.threeWay(base: base, local: local, remote: remote, preferLocal: true).value == parse(#"{"t":"mine","n":2}"#))
    }

    @Test func arraysChangeAsWholeValues() {
        let base = parse(#"{"l":[1,2,3]}"#)
        #expect(Merge.threeWay(base: base, local: base, remote: parse(#"{"l":[1,2,3,4]}"#), preferLocal: true).value == parse(#"{"l":[1,2,3,4]}"#))
        let both = Merge.threeWay(base: base, local: parse(#"{"l":[0,1,2,3]}"#), remote: parse(#"{"l":[1,2,3,4]}"#), preferLocal: true)
        #expect(both.conflicts == ["/l"])
        #expect(both.value == parse(#"{"l":[0,1,2,3]}"#))
    }

    @Test func aFieldRemovedOnOneSideAndUntouchedOnTheOtherIsRemoved() {
        let r = Merge.threeWay(base: parse(#"{"a":1,"b":2}"#), local: parse(#"{"a":1}"#), remote: parse(#"{"a":1,"b":2,"c":3}"#), preferLocal: false)
        #expect(r.value == parse(#"{"a":1,"c":3}"#))
    }

    @Test func layoutKeepsTheFilesKeyOrderAndAppendsNewKeys() {
        let existing = parse(#"{"z":1,"id":"x","a":{"q":1,"p":2},"gone":true}"#)
        let fresh = parse(#"{"id":"x","a":{"p":3,"q":1,"r":0},"z":2,"new":1}"#)
        let laid = Merge.keepingOrder(of: existing, fresh)
        #expect(JSONWriter.string(laid) == #"{"z":2,"id":"x","a":{"q":1,"p":3,"r":0},"new":1}"#)
    }
}

@Suite struct IgnoreRuleTests {
    @Test func gitignoreSyntax() {
        let rules = IgnoreRules(text: """
            # drafts stay local
            drafts/
            *.tmp.json
            /top.json
            reports/**/secret*.json
            !reports/q1/secret-ok.json
            """)
        #expect(rules.isIgnored("drafts/a.json", isDirectory: false))
        #expect(rules.isIgnored("x/drafts/a.json", isDirectory: false))
        #expect(!rules.isIgnored("drafts.json", isDirectory: false))
        #expect(rules.isIgnored("a/b/c.tmp.json", isDirectory: false))
        #expect(rules.isIgnored("top.json", isDirectory: false))
        #expect(!rules.isIgnored("sub/top.json", isDirectory: false))
        #expect(rules.isIgnored("reports/secret1.json", isDirectory: false))
        #expect(rules.isIgnored("reports/q1/deep/secret2.json", isDirectory: false))
        #expect(!rules.isIgnored("reports/q1/secret-ok.json", isDirectory: false))
        #expect(!rules.isIgnored("notes/a.json", isDirectory: false))
    }

    @Test func wildcardsMatchAsGitDoes() {
        #expect(IgnoreRules.glob("a*b*c", "aXbYbZc"))
        #expect(!IgnoreRules.glob("a*b*c", "aXbYbZ"))
        #expect(IgnoreRules.glob("*", ""))
        #expect(IgnoreRules.glob("?x", "ax") && !IgnoreRules.glob("?x", "x"))
        #expect(IgnoreRules.glob("\\*", "*") && !IgnoreRules.glob("\\*", "a"))
        #expect(IgnoreRules.glob("end\\", "end\\"))
        #expect(IgnoreRules.match(["**", "b", "**", "d"], ["a", "b", "c", "b", "x", "d"]))
        #expect(!IgnoreRules.match(["**", "b", "d"], ["a", "b", "c"]))
        #expect(IgnoreRules.match(["**"], []))
    }

    /// A `.docsyncignore` of many `*` (found by fuzzing) took minutes per path: matching
    /// backtracked exponentially. Now each match is linear in practice.
    @Test func aHostilePatternMatchesInLinearTime() {
        let rules = IgnoreRules(text: String(repeating: "*", count: 40) + "x\n" + Array(repeating: "**", count: 40).joined(separator: "/") + "/x")
        let path = String(repeating: "a", count: 200) + "/" + Array(repeating: "b", count: 60).joined(separator: "/")
        let start = ContinuousClock.now
        for _ in 0..<10 { _ = rules.isIgnored(path, isDirectory: false) }
        #expect(ContinuousClock.now - start < .seconds(2), "matched ten times in \(ContinuousClock.now - start)")
        #expect(!rules.isIgnored(path, isDirectory: false))
        #expect(rules.isIgnored(path + "x", isDirectory: false))
    }
}
