import DocsyncModel
import DocsyncSchema
import DocsyncTestSupport
import Foundation
import Testing

/// `validate`'s check of a folder, in the process: what is read, what is left out, and what a
/// file that is not a document says.
@Suite struct FolderSchemaCheckTests {
    /// A broken file and one over the size limit are findings with their reason; an ignored file
    /// and the state folder are not read; documents without a schema are counted as checked.
    @Test func everyDocumentIsJudgedAndWhatCannotBeReadSaysWhy() throws {
        let docs = try TempFolder("folder-check")
        defer { docs.remove() }
        try docs.write("schema/note.json", #"{"id": "note", "type": "object", "required": ["title"]}"#)
        try docs.write("note/ok.json", #"{"id": "ok", "title": "t"}"#)
        try docs.write("note/untitled.json", #"{"id": "untitled"}"#)
        try docs.write("note/broken.json", #"{"id": "broken", "title": "#)
        try docs.write("note/large.json", #"{"id": "large", "title": "\#(String(repeating: "x", count: 2_000))"}"#)
        try docs.write("other/free.json", #"{"id": "free"}"#)
        try docs.write("drafts/skip.json", "not even JSON")
        try docs.write(".docsyncignore", "drafts/\n")
        try docs.write(".docsync/staging/.tmp.json", "not a document of the folder")

        let check = FolderSchemaCheck.run(root: docs.path, maxFileSize: 1_024)
        #expect(check.checked == 6, "the schema, four notes and the document of a docType without one")
        #expect(check.invalid.map(\.path) == ["note/broken.json", "note/large.json", "note/untitled.json"])
        let reasons = Dictionary(uniqueKeysWithValues: check.invalid.map { ($0.path, $0.errors.map(\.message).joined()) })
        #expect(reasons["note/untitled.json"]?.contains("title") == true, "\(reasons)")
        #expect(reasons["note/large.json"]?.contains("1024") == true || reasons["note/large.json"]?.contains("1 KiB") == true, "\(reasons)")
        #expect(check.lines.last == "6 documents checked against 1 schema: 3 do not conform")
    }
}
