import DocsyncModel

/// `.docsyncignore` on hostile text: rules from the first lines, paths from the rest. Never a crash
/// or a hang (a pattern of many `**` must not match in exponential time).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIgnore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false)
    let rules = IgnoreRules(text: String(parts[0]))
    for path in (parts.count > 1 ? parts[1] : "a/b/c.json").split(separator: "\n").prefix(16) {
        _ = rules.isIgnored(String(path), isDirectory: path.hasSuffix("/"))
    }
    return 0
}
