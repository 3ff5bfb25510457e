import DocsyncModel

/// The schema compiler and validator on hostile bytes: the input is a schema and a document
/// separated by a NUL byte. Nothing may crash or hang; checking with and without messages must
/// agree (unless the collecting one ran out of its budget: the quiet one stops earlier and may
/// finish). Patterns are kept: PCRE2 matches them under the check's budget, so a pattern that
/// backtracks without end must end the check, not time the fuzzer out.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSchema(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let split = bytes.firstIndex(of: 0) ?? bytes.count
    guard let schema = try? JSONParser.parse(Array(bytes[..<split])),
          let document = try? JSONParser.parse(split < bytes.count ? Array(bytes[(split + 1)...]) : Array("{}".utf8)) else { return 0 }
    let uri = "docsync:schema/fuzz"
    guard let compiled = try? CompiledSchemas.compile([SchemaDocument(uri: uri, value: schema)]) else { return 0 }
    let violations = compiled.violations(of: document, against: uri)
    let outOfBudget = violations.first?.keyword == SchemaViolation.overBudgetKeyword
    precondition(outOfBudget || compiled.conforms(document, to: uri) == violations.isEmpty, "the quiet check and the collecting one disagree")
    for v in violations { precondition(v.instance.isEmpty || v.instance.hasPrefix("/"), "a violation's instance is not a JSON pointer") }
    return 0
}
