import DocsyncTestSupport
import DocsyncWatcher
import Foundation
import Logging
import Synchronization
import Testing

/// Real inotify on a temp folder, with a quiet period far longer than the test waits: a finished
/// save is handed on without it, a document moved away (the first step of vim's save) is not.
@Suite struct QuickSaveTests {
    /// A watcher whose batches are collected as they come; the settle is half a minute.
    final class Collected: Sendable {
        final class Received: Sendable { let list = Mutex<[ChangeBatch]>([]) }
        let received = Received()
        let watcher: DirectoryWatcher
        let reader: Task<Void, Never>

        init(_ folder: TempFolder) throws {
            watcher = DirectoryWatcher(
                root: folder.path, settle: .seconds(30), maxDelay: .seconds(60), logger: Logger(label: "test.quick-save"))
            let stream = try watcher.start()
            let received = received
            reader = Task { for await batch in stream { received.list.withLock { $0.append(batch) } } }
        }

        var paths: [Set<String>] { received.list.withLock { $0.map(\.paths) } }

        func stop() async {
            watcher.stop()
            await reader.value
        }
    }

    @Test func aFinishedSaveIsHandedOnWithoutTheQuietPeriod() async throws {
        let folder = try TempFolder("quick-save")
        defer { folder.remove() }
        let watch = try Collected(folder)
        try folder.write("a.json", #"{"n":1}"#)
        #expect(await eventually(timeout: .seconds(10)) { watch.paths == [["a.json"]] }, "seen long before the 30 s settle")
        await watch.stop()
    }

    @Test func aDocumentMovedAwayWaitsUntilItsNewVersionIsWritten() async throws {
        let folder = try TempFolder("quick-save")
        defer { folder.remove() }
        try folder.write("a.json", #"{"n":1}"#)
        let watch = try Collected(folder)
        try folder.move("a.json", "a.json~")
        // vim between renaming the original to its backup and writing the new file: had the
        // rename been handed on, the agent would have looked and found the document gone.
        try await Task.sleep(for: .milliseconds(100))
        #expect(watch.paths.isEmpty, "nothing handed on while a.json is missing")
        try folder.write("a.json", #"{"n":2}"#)
        #expect(await eventually(timeout: .seconds(10)) { watch.paths == [["a.json"]] }, "one batch, once the new version is there")
        await watch.stop()
    }
}
