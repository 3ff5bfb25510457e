import DocsyncModel
import Foundation

/// A fresh folder under the system temp directory, removed by `remove()`.
public struct TempFolder: Sendable {
    public let path: String

    public init(_ label: String = "docsync") throws {
        let base = ProcessInfo.processInfo.environment["DOCSYNC_TEST_TMP"] ?? NSTemporaryDirectory()
        let path = (base as NSString).appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
        Leftovers.remember(folder: path)
    }

    /// A folder made by other means (a mount point's subfolder); `remove()` removes it too.
    public init(existing path: String) {
        self.path = path
    }

    public func url(_ relative: String) -> URL { URL(fileURLWithPath: path + "/" + relative) }

    public func file(_ relative: String) -> String { path + "/" + relative }

    /// Writes `text` to `relative` (creating folders), the way `echo … > file` does: in place.
    public func write(_ relative: String, _ text: String) throws {
        let url = self.url(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    public func read(_ relative: String) throws -> String {
        try String(contentsOf: url(relative), encoding: .utf8)
    }

    public func bytes(_ relative: String) throws -> Data {
        try Data(contentsOf: url(relative))
    }

    public func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: file(relative))
    }

    public func move(_ from: String, _ to: String) throws {
        let target = url(to)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard rename(file(from), file(to)) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    public func remove(_ relative: String) throws {
        try FileManager.default.removeItem(atPath: file(relative))
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
        Leftovers.forget(folder: path)
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
/// Tests wait for what a user would see, never for a fixed time.
@discardableResult
public func eventually(
    timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// How much each of the counts `read` gives (calls a fake server counts) grew over `window`: the
/// rate a looping agent would show. The wait is the window measured, not a synchronisation.
public func growth(over window: Duration, of read: () -> [Int]) async throws -> [Int] {
    let start = read()
    try await Task.sleep(for: window)
    return zip(read(), start).map { $0 - $1 }
}

extension TempFolder {
    /// Makes `relative` a sparse file of `size` bytes: as large as it says, with no disk used.
    public func writeSparse(_ relative: String, size: UInt64) throws {
        let url = self.url(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.truncate(atOffset: size)
    }

    /// Writes `size` bytes of pseudo-random content (distinct for each `seed`) in 1 MiB pieces, and
    /// returns their SHA-256. Memory stays at one piece whatever the size.
    @discardableResult
    public func writeRandom(_ relative: String, size: Int, seed: UInt64) throws -> String {
        let url = self.url(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var piece = [UInt64](repeating: 0, count: (1 << 20) / 8)
        var hasher = ContentHasher()
        var left = size
        while left > 0 {
            for i in piece.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                piece[i] = state
            }
            let n = min(left, 1 << 20)
            try piece.withUnsafeBytes { raw in
                let part = UnsafeRawBufferPointer(rebasing: raw[0..<n])
                hasher.update(part)
                try handle.write(contentsOf: Data(part))
            }
            left -= n
        }
        return hasher.finalize()
    }
}
