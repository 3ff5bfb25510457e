import Foundation

/// The reader of the user's git index on hostile bytes (the index is a file on disk any program
/// may have written): never a crash, an overflow trap or a read past the end; what it finds is
/// only ever among the paths asked for, each as `mode hash` with a hash of the size asked for.
/// The same bytes as a cache tree (`TREE`, read before the index's checksum is checked) are
/// rewritten or refused, never a crash, and a tree rewritten is never longer than it was.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGitIndex(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let file = "/dev/shm/docsync-fuzz-gitindex-\(getpid())"
    guard FileManager.default.createFile(atPath: file, contents: Data(bytes: data, count: size)) else { fatalError("cannot write \(file)") }
    defer { unlink(file) }
    let wanted: Set<String> = ["a.json", "notes/b.json", "long/" + String(repeating: "x", count: 40), "é.json"]
    for hashSize in [20, 32] {
        guard let found = GitIndexFile.entries(of: wanted, in: file, hashSize: hashSize) else { continue }
        for (path, entry) in found {
            let parts = entry.split(separator: " ")
            guard wanted.contains(path), parts.count == 2, parts[0].count == 6, parts[1].count == hashSize * 2 else {
                fatalError("found \(path): \(entry), which was not asked for or is not an entry")
            }
        }
    }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for hashSize in [20, 32] {
        let tree = IndexCacheTree(changed: [Array("a/b.json".utf8), Array("notes/c.json".utf8)], hashSize: hashSize)
        if let rewritten = tree.invalidated(bytes), rewritten.count > bytes.count {
            fatalError("a cache tree of \(bytes.count) bytes rewritten as \(rewritten.count)")
        }
    }
    return 0
}
