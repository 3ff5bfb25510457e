#if canImport(Glibc)
import Glibc
#endif
@testable import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Trust finding (fourth round, 3): `rm -rf` of an idle agent's folder went unnoticed (the
/// agent's open descriptor on the folder keeps the kernel from reporting its deletion) and the
/// deletion of its documents was pushed; after `mkdir` and a new file at the path, that file was
/// pushed too. And a folder that loses most of its documents at once sent every deletion.
extension HeavySuites {
@Suite(.serialized) struct FolderRemovedTests {
    /// The live documents of `type` on the server, by id.
    private static func live(_ server: TestServer, _ type: String = "note") async throws -> Set<String> {
        Set(try await server.api.documents(type: type).filter { $0.value["deleted_at"] == nil || $0.value["deleted_at"] == .null }.keys)
    }

    /// `rm -rf DIR` as a user types it.
    private static func removeTree(_ path: String) throws {
        let rm = Process()
        rm.executableURL = URL(fileURLWithPath: "/bin/rm")
        rm.arguments = ["-rf", path]
        try rm.run()
        rm.waitUntilExit()
    }

    private static func startWithNotes(_ count: Int, server: TestServer, folder: TempFolder) async throws -> TestAgent {
        for n in 0..<count { try folder.write("notes/n\(n).json", #"{"id": "n\#(n)", "docType": "note", "n": \#(n)}"#) }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { (try? await Self.live(server))?.count == count })
        #expect(try await agent.settled())
        return agent
    }

    @Test func rmRfOfAnIdleAgentsFolderSendsNoDeletionAndStopsTheAgent() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("rm-rf")
        defer { folder.remove() }
        let agent = try await Self.startWithNotes(5, server: server, folder: folder)
        try Self.removeTree(folder.path)
        let outcome = await FolderGuardTests.outcome(of: agent.task, within: .seconds(10))
        #expect(outcome?.contains("was moved away or deleted") == true, "\(String(describing: outcome))")
        #expect(try await Self.live(server).count == 5, "a deletion reached the server")
        await server.stop()
    }

    /// `rm -rf docs && git clone … docs`: the clone's documents are not the folder that was
    /// synced, and none of them, nor any deletion, reaches the server.
    @Test func rmRfFollowedByAGitCloneIntoThePathSendsNothing() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("rm-rf-clone")
        let origin = try TempFolder("rm-rf-origin")
        defer { folder.remove(); origin.remove() }
        _ = try git(["init", "-q", "-b", "main"], in: origin.path)
        try origin.write("notes/cloned.json", #"{"id": "cloned", "docType": "note"}"#)
        _ = try git(["add", "-A"], in: origin.path)
        _ = try git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "docs"], in: origin.path)
        let agent = try await Self.startWithNotes(5, server: server, folder: folder)
        try Self.removeTree(folder.path)
        _ = try git(["clone", "-q", origin.path, folder.path], in: origin.path)
        let outcome = await FolderGuardTests.outcome(of: agent.task, within: .seconds(10))
        #expect(outcome?.contains("was moved away or deleted") == true, "\(String(describing: outcome))")
        #expect(try await Self.live(server) == Set((0..<5).map { "n\($0)" }))
        await server.stop()
    }

    /// 150 documents, 110 of them deleted at once in a folder still there, then 10 more while
    /// they are held: all held, said with their count, and written back on `restore`; a few
    /// deleted afterwards go out on their own.
    @Test func aMassDeletionInTheFolderIsHeldAndRestoreWritesTheFilesBack() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("mass-delete")
        defer { folder.remove() }
        let agent = try await Self.startWithNotes(150, server: server, folder: folder)
        for n in 0..<110 { try FileManager.default.removeItem(atPath: folder.file("notes/n\(n).json")) }
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.heldLocalDeletions == 110 })
        #expect(try await AgentStatus.read(agent.index).heldLocalBecause?.contains("110 of the folder's 150 documents were deleted here at once") == true)
        // Deletions made while the burst waits join it (a large `rm` is seen in several batches).
        for n in 110..<120 { try FileManager.default.removeItem(atPath: folder.file("notes/n\(n).json")) }
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.heldLocalDeletions == 120 })
        let status = try await AgentStatus.read(agent.index)
        #expect(status.heldLocalBecause?.contains("120 of the folder's 150 documents were deleted here at once") == true)
        #expect(!status.inSync())
        #expect(status.text(now: 0).contains("docsync resolve --deletions apply DIR sends them"))
        #expect(try await Self.live(server).count == 150)

        try await agent.index.write { try $0.setMeta(.deletionsDecision, "restore") }
        #expect(await eventually { FileManager.default.fileExists(atPath: folder.file("notes/n119.json")) })
        #expect(try await agent.settled())
        #expect(try await AgentStatus.read(agent.index).inSync())
        let restored = try DocumentRules.parseObject(Array(Data(contentsOf: URL(fileURLWithPath: folder.file("notes/n7.json")))))
        #expect(restored["n"] == .number("7"))

        // A few deletions are not a mass deletion: they go.
        for n in 0..<3 { try FileManager.default.removeItem(atPath: folder.file("notes/n\(n).json")) }
        #expect(await eventually { (try? await Self.live(server))?.count == 147 })
        try await agent.stop()
        await server.stop()
    }

    @Test func aMassDeletionAppliedByTheUserIsSent() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("mass-apply")
        defer { folder.remove() }
        let agent = try await Self.startWithNotes(120, server: server, folder: folder)
        try Self.removeTree(folder.file("notes"))
        #expect(await eventually { (try? await AgentStatus.read(agent.index))?.heldLocalDeletions == 120 })
        #expect(try await Self.live(server).count == 120)
        try await agent.index.write { try $0.setMeta(.deletionsDecision, "apply") }
        #expect(await eventually { (try? await Self.live(server))?.isEmpty == true })
        try await agent.stop()
        await server.stop()
    }
}
}
