import ArgumentParser
import DocsyncSchema
import DocsyncModel
import Foundation

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every document of a folder against the folder's schemas (documents of docType schema), without a server.",
        discussion: """
            A schema is a document of docType "schema" whose id is the docType it describes, e.g. schema/invoice.json \
            with "id": "invoice", holding a JSON Schema (draft 2020-12). Exits 0 when every document conforms, 1 \
            otherwise: fit for a pre-commit hook or CI (see docs/SCHEMAS.md).
            """)

    @Argument(help: "The folder to check.")
    var directory: String

    @Flag(help: "Print one JSON object: {\"checked\": N, \"invalid\": [{\"path\", \"errors\": [{\"instance\", \"keyword\", \"message\"}]}]}.")
    var json = false

    @Flag(help: "Make `format` an assertion for date-time, date, time, email, uri, uuid and ipv4 (an annotation by default, as the draft says).")
    var assertFormats = false

    func run() throws {
        let root = absolutePath(directory)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(root) is not a folder")
        }
        let check = FolderSchemaCheck.run(root: root, assertFormats: assertFormats)
        if json {
            emit(JSONWriter.string(check.json))
        } else {
            for line in check.lines { emit(line) }
        }
        if !check.invalid.isEmpty { throw ExitCode(1) }
    }
}
