import Synchronization

/// The stage-0 entries of some paths, picked out of `git ls-files -s -z` as its output comes: a
/// commit of many files asks for the whole index's listing (7 MB at 100,000 entries) and keeps a
/// few thousand records of it, so the listing is never held whole.
final class IndexListing: Sendable {
    private let paths: Set<String>
    /// The record cut off at the end of the last chunk, and the entries found so far.
    private let state = Mutex<(partial: [UInt8], found: [String: String])>(([], [:]))

    init(_ paths: Set<String>) {
        self.paths = paths
    }

    /// What was found: `mode sha` by path.
    var found: [String: String] { state.withLock { $0.found } }

    /// The next chunk of the listing: its whole records read, the last one's start kept.
    func take(_ chunk: ArraySlice<UInt8>) {
        state.withLock { s in
            var rest = chunk
            if !s.partial.isEmpty {
                guard let end = rest.firstIndex(of: 0) else {
                    s.partial.append(contentsOf: rest)
                    return
                }
                record(s.partial + rest[..<end], into: &s.found)
                s.partial = []
                rest = rest[(end + 1)...]
            }
            while let end = rest.firstIndex(of: 0) {
                record(rest[..<end], into: &s.found)
                rest = rest[(end + 1)...]
            }
            s.partial = Array(rest)
        }
    }

    /// One record, `<mode> SP <sha> SP <stage> TAB <path>`, kept if its path is asked for.
    private func record(_ record: some Collection<UInt8>, into found: inout [String: String]) {
        guard let tab = record.firstIndex(of: UInt8(ascii: "\t")) else { return }
        let path = String(decoding: record[record.index(after: tab)...], as: UTF8.self)
        guard paths.contains(path) else { return }
        let head = String(decoding: record[..<tab], as: UTF8.self).split(separator: " ")
        guard head.count == 3, head[2] == "0" else { return }
        found[path] = "\(head[0]) \(head[1])"
    }
}
