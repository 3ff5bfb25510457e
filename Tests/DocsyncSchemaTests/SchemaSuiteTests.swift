import Foundation
import DocsyncModel
import DocsyncSchema
import Testing

/// The JSON-Schema-Test-Suite's draft 2020-12 tests, from the copy in the `jsonschema` source
/// package that `scripts/install-deps.sh` unpacks to `.schema-suite/` (not committed).
/// Remote references are served from the suite's `remotes/` folder as the suite's README says,
/// by handing those documents to the compiler: docsync never fetches a schema.
@Suite struct SchemaSuiteTests {
    @Test func everyRequiredTestOfDraft2020_12Passes() throws {
        let result = try SchemaSuite.run(folder: "tests/draft2020-12", assertFormats: false)
        print("schema suite, required: \(result.passed) of \(result.total) passed")
        #expect(result.total > 1000, "the suite was not found or is incomplete")
        for failure in result.failures { print("  required failed: \(failure)") }
        #expect(result.failures.isEmpty, "\(result.failures.count) required tests failed (listed above)")
    }

    /// Optional tests are not asserted one by one; their count is kept in README and must not fall.
    @Test func optionalTestsOfDraft2020_12AreCounted() throws {
        let optional = try SchemaSuite.run(folder: "tests/draft2020-12/optional", assertFormats: false)
        let formats = try SchemaSuite.run(folder: "tests/draft2020-12/optional/format", assertFormats: true)
        print("schema suite, optional: \(optional.passed) of \(optional.total) passed; formats asserted: \(formats.passed) of \(formats.total)")
        for failure in (optional.failures + formats.failures) { print("  optional failed: \(failure)") }
        #expect(optional.total > 100)
        #expect(optional.passed * 100 >= optional.total * 80)
    }
}

enum SchemaSuite {
    struct Result {
        var total = 0
        var passed = 0
        var failures: [String] = []
    }

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".schema-suite")
    }

    static func run(folder: String, assertFormats: Bool) throws -> Result {
        let directory = root.appendingPathComponent(folder)
        let remotes = try loadRemotes()
        var result = Result()
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        for file in files {
            let groups = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent(file))))
            for (g, group) in (groups.elements ?? []).enumerated() {
                runGroup(group, name: "\(file)#\(g)", remotes: remotes, assertFormats: assertFormats, into: &result)
            }
        }
        return result
    }

    private static func runGroup(_ group: JSONValue, name: String, remotes: [SchemaDocument], assertFormats: Bool, into result: inout Result) {
        let object = group.object ?? JSONObject()
        let description = object["description"]?.string ?? name
        let tests = object["tests"]?.elements ?? []
        let uri = "https://docsync.test/suite/\(name.replacingOccurrences(of: "#", with: "/"))"
        let schema = object["schema"] ?? .bool(true)
        let compiled: CompiledSchemas
        do {
            compiled = try CompiledSchemas.compile(remotes + [SchemaDocument(uri: uri, value: schema)], assertFormats: assertFormats)
        } catch {
            result.total += tests.count
            result.failures.append("\(name) \(description): does not compile: \(error)")
            return
        }
        for test in tests {
            let t = test.object ?? JSONObject()
            result.total += 1
            let expected = t["valid"] == .bool(true)
            let data = t["data"] ?? .null
            let conforms = compiled.conforms(data, to: uri)
            let violations = compiled.violations(of: data, against: uri)
            if conforms == expected && violations.isEmpty == expected {
                result.passed += 1
            } else {
                result.failures.append("\(name) \(description) / \(t["description"]?.string ?? "?"): expected \(expected ? "valid" : "invalid")")
            }
        }
    }

    /// Every remote as `http://localhost:1234/<path under remotes/>`, but other drafts' folders.
    static func loadRemotes() throws -> [SchemaDocument] {
        let base = root.appendingPathComponent("remotes")
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        var documents: [SchemaDocument] = []
        for case let path as String in walker where path.hasSuffix(".json") {
            let firstFolder = path.split(separator: "/").first.map(String.init) ?? ""
            if firstFolder.hasPrefix("draft") && firstFolder != "draft2020-12" && path.contains("/") { continue }
            let value = try JSONParser.parse(Array(try Data(contentsOf: base.appendingPathComponent(path))))
            documents.append(SchemaDocument(uri: "http://localhost:1234/\(path)", value: value))
        }
        return documents.sorted { $0.uri < $1.uri }
    }
}
