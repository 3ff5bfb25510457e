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
        for (key, value) in GitPacking.onFirstLooseObject { try await git.check(["config", key, value]) }
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        let plan = GitCommitPlan.pulled([.put(path: "notes/a.json", bytes: Array("{\"a\":1}\n".utf8))])
        guard case .committed = try await writer.commit([plan]) else {
            Issue.record("no commit")
            return
        }
        try await git.check(["config", "maintenance.auto", "false"])
        try await writer.maintain()
        #expect(GitPacking.packs(in: repo.path) == 0, "maintenance.auto=false: nothing runs")
        try await git.check(["config", "maintenance.auto", "true"])
        try await writer.maintain()
        #expect(GitPacking.packs(in: repo.path) == 1, "the commit's loose objects are packed")
        #expect(try await git.check(["cat-file", "-p", "HEAD:notes/a.json"]).text == "{\"a\":1}")
    }
}
