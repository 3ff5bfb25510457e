import DocsyncTestSupport
import Foundation
import Testing

/// `scripts/check-seams.sh` checks principles, not spellings: a side door into the folder (a part
/// calling the applier's writes itself) or a part set after it was made fails it. Run on a copy of
/// `Sources/` with one planted.
@Suite struct SeamsScriptTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The script's exit code and output on a copy of the sources with `line` appended to `file`.
    func check(planting line: String, in file: String) throws -> (Int32, String) {
        let copy = try TempFolder("seams")
        defer { copy.remove() }
        try FileManager.default.copyItem(atPath: Self.repository + "/Sources", toPath: copy.file("Sources"))
        let handle = try #require(FileHandle(forWritingAtPath: copy.file(file)))
        handle.seekToEndOfFile()
        handle.write(Data(("\n" + line + "\n").utf8))
        try handle.close()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.repository + "/scripts/check-seams.sh")
        process.arguments = [copy.path]
        let output = Pipe()
        process.standardError = output
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func theSourcesAsTheyAreHoldTheSeams() throws {
        let (code, text) = try check(planting: "// nothing", in: "Sources/DocsyncAgent/Push/Pusher.swift")
        #expect(code == 0, "\(text)")
    }

    @Test func aSideDoorIntoTheFolderFailsTheCheck() throws {
        let (code, text) = try check(planting: "func door() async throws { _ = try await changes.applier.apply([]) }", in: "Sources/DocsyncAgent/Push/Pusher.swift")
        #expect(code != 0 && text.contains("a side door into the folder"), "\(text)")
    }

    @Test func aPartSetAfterItWasMadeFailsTheCheck() throws {
        let (code, text) = try check(planting: "        applier.remoteFiles = { _, _ in nil }", in: "Sources/DocsyncAgent/Agent/Agent.swift")
        #expect(code != 0 && text.contains("assigned after it was made"), "\(text)")
    }

    @Test func aPartCopyingItsContextsValuesFailsTheCheck() throws {
        let (code, text) = try check(planting: "        self.logger = context.logger", in: "Sources/DocsyncAgent/Scan/Scanner.swift")
        #expect(code != 0 && text.contains("copies a value of its FolderContext"), "\(text)")
    }
}
