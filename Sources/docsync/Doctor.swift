import ArgumentParser
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import Foundation

struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check what breaks sync in the field and say what to do: inotify limits, unreadable files, disk, the index, the endpoint and its clock.",
        discussion: "Exits 0 when nothing failed (warnings allowed), 1 otherwise.")

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var endpoint: EndpointOptions

    @Flag(help: "Print one JSON object.")
    var json = false

    @Option(help: .hidden)  // test seam: act as if fs.inotify.max_user_watches were this
    var watchLimit: Int?

    func run() async throws {
        let root = absolutePath(directory)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(root) is not a folder")
        }
        var findings = DoctorChecks.tree(root: root, watchLimit: watchLimit)
        findings.append(DoctorChecks.disk(root: root))
        findings.append(await DoctorChecks.index(root: root))
        findings += try await endpointFindings()
        let failed = findings.contains { $0.verdict == .fail }
        if json {
            emit(JSONWriter.string(.object(JSONObject([
                (key: "ok", value: .bool(!failed)), (key: "checks", value: .array(findings.map(\.json))),
            ]))))
        } else {
            for finding in findings { emit(finding.text) }
        }
        if failed { throw ExitCode(1) }
    }

    private func endpointFindings() async throws -> [Finding] {
        let clock = ServerClock()
        let client = try makeHTTPClient(caFile: endpoint.caFile.map(absolutePath))
        let context = EndpointContext(clientID: "doctor", clock: clock, requestTimeout: .seconds(10), credential: try endpoint.token())
        let api = try EndpointChoice(url: endpoint.endpoint).factory(client: client)(context)
        let findings = await DoctorChecks.endpoint(api, clock: clock)
        try await client.shutdown()
        return findings
    }
}
