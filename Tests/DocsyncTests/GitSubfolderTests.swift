import DocsyncAgent
import DocsyncTestSupport
import Foundation
import Testing

extension HeavySuites {
/// A synced folder inside a larger work tree: pulled changes are committed under the folder's
/// path, and the user's index follows them (git reads the paths docsync names from the folder).
@Suite(.serialized) struct GitSubfolderTests {
    @Test func aFolderInsideTheWorkTreeCommitsUnderItsPathAndTheIndexFollowsEachChange() async throws {
        let server = try await TestServer.start()
        let repo = try TempFolder("git-sub")
        defer { repo.remove() }
        try git(["init", "-q", "-b", "main"], in: repo.path)
        try repo.write("README", "mine\n")
        try repo.write(".gitignore", ".docsync/\n")
        try repo.write("records/.keep", "")
        try git(["add", "README", ".gitignore", "records/.keep"], in: repo.path)
        try git(["commit", "-qm", "start"], in: repo.path)
        let folder = TempFolder(existing: repo.file("records"))
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) {
            $0.git = GitHistoryOptions(target: .checkedOut)
        }
        let clean = { (try? git(["status", "--porcelain", "--untracked-files=no"], in: repo.path)) == "" }
        for version in 1...3 {
            #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"x","docType":"note","v":\#(version)}"#).status == 200)
            #expect(await eventually {
                (try? git(["show", "HEAD:records/note/x.json"], in: repo.path))?.contains("\"v\": \(version)") == true && clean()
            }, "version \(version): \((try? git(["status", "--porcelain"], in: repo.path)) ?? "")")
        }
        try await agent.stop()
        await server.stop()
    }
}
}
