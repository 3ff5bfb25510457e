import DocsyncModel

/// The schema compiler and validator on hostile bytes: the input is a schema and a document
/// separated by a NUL byte. Nothing may crash or hang; checking with and without messages must
/// agree. `pattern` and `patternProperties` are taken out of the schema first: Swift's `Regex`
/// backtracks without a bound, a known limit (docs/SCHEMAS.md) the fuzzer would find as a timeout.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSchema(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let split = bytes.firstIndex(of: 0) ?? bytes.count
    guard let schema = try? JSONParser.parse(Array(bytes[..<split])),
          let document = try? JSONParser.parse(split < bytes.count ? Array(bytes[(split + 1)...]) : Array("{}".utf8)) else { return 0 }
    let uri = "docsync:schema/fuzz"
    guard let compiled = try? CompiledSchemas.compile([SchemaDocument(uri: uri, value: withoutPatterns(schema))]) else { return 0 }
    let violations = compiled.violations(of: document, against: uri)
    precondition(compiled.conforms(document, to: uri) == violations.isEmpty, "the quiet check and the collecting one disagree")
    for v in violations { precondition(v.instance.isEmpty || v.instance.hasPrefix("/"), "a violation's instance is not a JSON pointer") }
    return 0
}

private func withoutPatterns(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let object):
        return .object(JSONObject(object.members.filter { $0.key != "pattern" && $0.key != "patternProperties" }.map { ($0.key, withoutPatterns($0.value)) }))
    case .array(let elements):
        return .array(elements.map(withoutPatterns))
    default:
        return value
    }
}
