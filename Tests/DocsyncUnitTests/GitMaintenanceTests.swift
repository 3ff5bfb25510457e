@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// After its commits the agent runs git's automatic maintenance (`GitHistoryWriter.maintain`),
/// under the repository's own settings, and not when the user turned it off.
@Suite struct GitMaintenanceTests {
    @Test func gitsAutomaticMaintenanceRunsUnderTheRepositorysSettingsAndNotWhenTurnedOff() async throws {
        let repo = try TempFolder("git-maintenance")
        defer { repo.remove() }
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main"])
        // A task that packs loose objects once there is one, in place of gc's 6,700.
        for (key, value) in [("maintenance.gc.enabled", "false"), ("maintenance.loose-objects.enabled", "true"), ("maintenance.loose-objects.auto", "1")] {
            try await git.check(["config", key, value])
        }
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        let plan = GitCommitPlan.pulled([.put(path: "notes/a.json", bytes: Array("{\"a\":1}\n".utf8))])
        guard case .committed = try await writer.commit([plan]) else {
            Issue.record("no commit")
            return
        }
        func packs() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: repo.file(".git/objects/pack"))) ?? []).filter { $0.hasSuffix(".pack") }.count
        }
        try await git.check(["config", "maintenance.auto", "false"])
        try await writer.maintain()
        #expect(packs() == 0, "maintenance.auto=false: nothing runs")
        try await git.check(["config", "maintenance.auto", "true"])
        try await writer.maintain()
        #expect(packs() == 1, "the commit's loose objects are packed")
        #expect(try await git.check(["cat-file", "-p", "HEAD:notes/a.json"]).text == "{\"a\":1}")
    }
}
