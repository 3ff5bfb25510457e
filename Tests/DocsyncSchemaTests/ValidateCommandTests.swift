import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// `docsync validate DIR [--json]`, the real binary on a real folder, as a pre-commit hook runs it.
@Suite struct ValidateCommandTests {
    private func folder() throws -> TempFolder {
        let docs = try TempFolder("validate")
        try docs.write("schema/invoice.json", #"""
            {"id": "invoice", "type": "object", "required": ["number", "total"],
             "properties": {"number": {"type": "string", "pattern": "^INV-[0-9]{4}-[0-9]+$"}, "total": {"type": "number"}}}
            """#)
        try docs.write("invoices/2026/inv-8.json", #"{"id": "inv-8", "number": "INV-2026-8", "total": 12.5}"#)
        try docs.write("notes/n1.json", #"{"id": "n1", "text": "no schema for notes"}"#)
        return docs
    }

    @Test func aConformingFolderExitsZero() async throws {
        let docs = try folder()
        defer { docs.remove() }
        let (status, out, _) = try await runDocsync(["validate", docs.path], logDirectory: docs.path)
        #expect(status == 0)
        #expect(out.contains("3 documents checked against 1 schema: all conform"))
    }

    @Test func anInvalidDocumentIsNamedWithItsPointerAndTheFolderExitsOne() async throws {
        let docs = try folder()
        defer { docs.remove() }
        try docs.write("invoices/2026/inv-7.json", #"{"id": "inv-7", "docType": "invoice", "number": "INV-2026-7", "total": "12.50"}"#)
        try docs.write("schema/typo.json", #"{"id": "typo", "properties": {"a": {"minimum": "one"}}}"#)
        try docs.write("schema/nameless.json", #"{"type": "object"}"#)
        let (status, out, _) = try await runDocsync(["validate", docs.path], logDirectory: docs.path)
        #expect(status == 1)
        #expect(out.contains(#"invoices/2026/inv-7.json: /total: expected a number, got the string "12.50""#))
        #expect(out.contains("schema/typo.json: not a valid JSON Schema (draft 2020-12): /properties/a/minimum: expected a number"))
        #expect(out.contains(#"schema/nameless.json: a schema document needs an "id""#))

        let (jsonStatus, json, _) = try await runDocsync(["validate", "--json", docs.path], logDirectory: docs.path)
        #expect(jsonStatus == 1)
        let report = try JSONParser.parse(json.trimmingCharacters(in: .whitespacesAndNewlines)).object!
        #expect(report["checked"] == .number("6"))
        let invalid = report["invalid"]?.elements ?? []
        #expect(invalid.compactMap { $0.object?["path"]?.string } == ["invoices/2026/inv-7.json", "schema/nameless.json", "schema/typo.json"])
        let first = invalid.first?.object?["errors"]?.elements?.first?.object
        #expect(first?["instance"] == .string("/total"))
        #expect(first?["keyword"] == .string("type"))
        #expect(first?["message"] == .string(#"expected a number, got the string "12.50""#))
    }

    /// Trust finding (fourth round, 1): `docsync validate` hung on `^(.*a){25}$`. The document
    /// is reported with the budget's reason, the others are checked, and the command ends.
    @Test func aPatternThatBacktracksWithoutEndIsReportedNotAHang() async throws {
        let docs = try folder()
        defer { docs.remove() }
        try docs.write("schema/trap.json", #"{"id": "trap", "properties": {"s": {"type": "string", "pattern": "^(.*a){25}$"}}}"#)
        try docs.write("traps/t1.json", #"{"id": "t1", "docType": "trap", "s": "\#(String(repeating: "a", count: 60))b"}"#)
        let (status, out, _) = try await runDocsync(["validate", docs.path], logDirectory: docs.path)
        #expect(status == 1)
        #expect(out.contains("traps/t1.json: checking this document against its schema took more work than a check may do"), "\(out)")
        #expect(!out.contains("inv-8"))
    }
}
