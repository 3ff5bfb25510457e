import DocsyncModel
import DocsyncSchema
import DocsyncTestSupport
import Foundation

/// The cost of a schema: the same invoices imported with and without their docType's schema,
/// rounds alternating which goes first, each on an empty server of its own and an index made
/// anew; and the validator alone, on one core.
struct SchemaRun {
    var documents = 0
    var without: [Double] = []
    var with: [Double] = []
    var validationsPerSecond = Double.nan

    /// Each round's ratio (with / without, in docs/s): the two imports of a round ran back to back.
    var ratios: [Double] { zip(with, without).map { $1 / $0 } }

    var table: String {
        let rows = zip(without, with).enumerated().map { i, pair in
            "| \(i + 1) | \(fmt(Double(documents) / pair.0, 0)) | \(fmt(Double(documents) / pair.1, 0)) | \(fmt(pair.0 / pair.1, 2))× |"
        }
        return """
            ## schema run: \(documents) invoices (10 properties, required fields, a pattern, an enum, nested objects)

            | round | import without a schema, docs/s | with it, docs/s | with / without |
            |---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))

            Median with / without: \(fmt(percentile(ratios, 50), 2))×. The validator alone: \(fmt(validationsPerSecond, 0)) validations/s on one core.
            """
    }
}

extension Bench {
    /// The schema of the run: what a typical hand-kept record type looks like.
    static let invoiceSchema = #"""
        {"id": "invoice", "type": "object", "required": ["number", "issued", "status", "customer", "lines", "total"],
         "properties": {
           "number": {"type": "string", "pattern": "^INV-[0-9]{4}-[0-9]+$"},
           "issued": {"type": "string", "format": "date"},
           "status": {"enum": ["draft", "sent", "paid", "void"]},
           "currency": {"type": "string", "minLength": 3, "maxLength": 3},
           "customer": {"type": "object", "required": ["name"], "properties": {
             "name": {"type": "string", "minLength": 1}, "email": {"type": "string"},
             "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}, "zip": {"type": "string"}}}}},
           "lines": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["sku", "qty", "price"], "properties": {
             "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}, "price": {"type": "number", "minimum": 0}}}},
           "total": {"type": "number", "minimum": 0},
           "paid": {"type": "boolean"},
           "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
           "notes": {"type": "string", "maxLength": 2000}}}
        """#

    func invoice(_ i: Int) -> String {
        let notes = String(repeating: "Delivered to the loading bay, signed for. ", count: 12)
        return #"{"id":"inv-\#(i)","docType":"invoice","number":"INV-2026-\#(i)","issued":"2026-11-\#(String(format: "%02d", i % 28 + 1))","status":"sent","currency":"EUR","customer":{"name":"Customer \#(i % 500)","email":"c\#(i % 500)@example.org","address":{"street":"\#(i) Main St","city":"Springfield","zip":"\#(10000 + i % 9000)"}},"lines":[{"sku":"A-\#(i % 97)","qty":\#(i % 9 + 1),"price":12.5},{"sku":"B-\#(i % 89)","qty":1,"price":3.75}],"total":\#(Double(i % 9 + 1) * 12.5 + 3.75),"paid":false,"tags":["q4","eu"],"notes":"\#(notes)"}"#
    }

    func measureSchemaImport(count: Int, work: TempFolder) async throws -> SchemaRun {
        var run = SchemaRun(documents: count)
        let folder = work.file("invoices-run")
        log("schema run: generating \(count) invoices")
        for i in 0..<count { try write(invoice(i), to: "\(folder)/invoice/g\(i / 100)/inv-\(i).json") }
        sync()
        for round in 0..<rounds {
            // Which goes first alternates, so neither always meets a warmer page cache.
            for withSchema in round % 2 == 0 ? [false, true] : [true, false] {
                let seconds = try await importInvoices(folder: folder, count: count, withSchema: withSchema, work: work)
                if withSchema { run.with.append(seconds) } else { run.without.append(seconds) }
                log("schema run, round \(round + 1): \(withSchema ? "with" : "without") a schema, \(fmt(Double(count) / seconds, 0)) docs/s")
            }
        }
        run.validationsPerSecond = try validationRate()
        return run
    }

    /// One import of the folder from scratch (its index removed), with or without the schema
    /// file, until a fresh server holds every invoice.
    private func importInvoices(folder: String, count: Int, withSchema: Bool, work: TempFolder) async throws -> Double {
        try? FileManager.default.removeItem(atPath: folder + "/.docsync")
        try? FileManager.default.removeItem(atPath: folder + "/schema")
        if withSchema { try write(Self.invoiceSchema, to: folder + "/schema/invoice.json") }
        let name = "serve-schema"
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let start = now()
        let agent = try DocsyncProcess(["watch", folder, "--endpoint", api.baseURL, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-schema")
        try await waitForDocuments(api, atLeast: count + (withSchema ? 1 : 0), process: agent)
        let seconds = seconds(since: start)
        await agent.stop()
        return seconds
    }

    /// One core, one compiled schema, one invoice checked over and over for about a second.
    private func validationRate() throws -> Double {
        guard let schema = try JSONParser.parse(Self.invoiceSchema).object else { return .nan }
        let schemas = DocTypeSchemas(["invoice": schema])
        let documents = try (0..<100).map { try JSONParser.parse(invoice($0)).object ?? JSONObject() }
        var checked = 0
        let start = now()
        while seconds(since: start) < 1 {
            for document in documents where schemas.violations(of: document, docType: "invoice")?.isEmpty != true {
                throw ProcessFailure("an invoice of the run does not conform to its schema")
            }
            checked += documents.count
        }
        return Double(checked) / seconds(since: start)
    }
}
