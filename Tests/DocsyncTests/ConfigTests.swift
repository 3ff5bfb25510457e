@testable import DocsyncConfig
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// `watch --config`'s file as a user writes it, mistypes it, or an attacker shapes it: what it
/// reads, and for what it refuses, the file, the line and the reason.
@Suite struct ConfigTests {
    let file = "/etc/docsync/docsync.yaml"

    func refusal(_ text: String) -> String {
        do {
            _ = try AgentConfig.parse(text, file: file)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    @Test func aConfigWithTwoFoldersReadsWithPathsFromItsOwnFolder() throws {
        let config = try AgentConfig.parse("""
            # two folders
            log_level: debug
            metrics_addr: 127.0.0.1:9464
            folders:
              - path: notes            # relative to the file
                endpoint: http://127.0.0.1:8080
                token_file: notes.token
                ignore: [drafts/, "*.tmp.json"]
                poll_interval: 2.5
                deletion_guard: off
                git: commit
                authors: {alice: "Alice Liddell <alice@example.org>"}
              - name: work-invoices
                git: {branch: docsync/server}
                deletion_guard: 30
                path: ~/invoices
                endpoint: kinto+http://127.0.0.1:8888/v1/buckets/acme
                max_file_size: 1048576
                max_download_size: 10485760
                types: [invoice, receipt]
                exclude_types: receipt
            """, file: file)
        #expect(config.logLevel == "debug" && config.metricsAddr == "127.0.0.1:9464")
        #expect(config.folders.map(\.name) == ["notes", "work-invoices"])
        #expect(config.folders[0].path == "/etc/docsync/notes")
        #expect(config.folders[0].tokenFile == "/etc/docsync/notes.token")
        #expect(config.folders[0].ignore == ["drafts/", "*.tmp.json"])
        #expect(config.folders[0].pollInterval == 2.5)
        #expect(config.folders[0].deletionGuardPercent == 0 && config.folders[1].deletionGuardPercent == 30)
        #expect(config.folders[1].path == NSHomeDirectory() + "/invoices")
        #expect(config.folders[0].git == .commit && config.folders[1].git == .branch("docsync/server"))
        #expect(config.folders[0].authors == ["alice": "Alice Liddell <alice@example.org>"] && config.folders[1].authors.isEmpty)
        #expect(config.folders[1].maxFileSize == 1_048_576 && config.folders[1].tokenFile == nil)
        #expect(config.folders[1].maxDownloadSize == 10_485_760 && config.folders[0].maxDownloadSize == nil)
        #expect(config.folders[1].types == ["invoice", "receipt"] && config.folders[1].excludeTypes == ["receipt"])
        #expect(config.folders[0].types == nil && config.folders[0].excludeTypes.isEmpty)
    }

    /// Regression: `~` was the passwd entry's home, not `$HOME` as a shell (and the user) reads it.
    @Test func aTildeIsTheHomeVariable() {
        #expect(ConfigPaths.absolute("~/records", base: "/etc", environment: ["HOME": "/srv/alice"]) == "/srv/alice/records")
        #expect(ConfigPaths.absolute("~", base: "/etc", environment: ["HOME": "/srv/alice/"]) == "/srv/alice")
        #expect(ConfigPaths.absolute("records", base: "/etc/docsync", environment: ["HOME": "/srv/alice"]) == "/etc/docsync/records")
    }

    @Test func mistakesAreNamedWithTheirLine() {
        let typo = refusal("folders:\n  - path: a\n    endpoint: http://h\n    tokenfile: t\n")
        #expect(typo.hasPrefix("\(file):4: ") && typo.contains("unknown key `tokenfile`") && typo.contains("token_file"), "\(typo)")
        #expect(refusal("folders:\n  - path: a\n").contains(":2: folders[0] has no `endpoint:`"))
        #expect(refusal("folders:\n  - path: a\n    endpoint: http://h\n    poll_interval: ten\n").contains(":4: folders[0].poll_interval must be a number"))
        #expect(refusal("folders:\n  - path: a\n    endpoint: http://h\n    max_file_size: -1\n").contains("max_file_size must be a number from 1"))
        #expect(refusal("folders:\n  - path: a\n    endpoint: http://h\n    max_download_size: 1e300\n").contains("max_download_size must be a number"))
        #expect(refusal("folders:\n  - path: a\n    endpoint: http://h\n    deletion_guard: 150\n").contains(":4: folders[0].deletion_guard (a percentage, or off) must be a number from 1"))
        #expect(refusal("log_level: info\n").contains("has no `folders:` list"))
        #expect(refusal("folders: []\n").contains("`folders:` is empty"))
        #expect(refusal("folders:\n  - {path: a, endpoint: http://h, types: [ok, a/b]}\n").contains(":2: folders[0].types: \"a/b\" is not a docType"))
        let many = (0...TypeSelection.maxTypes).map { "t\($0)" }.joined(separator: ", ")
        #expect(refusal("folders:\n  - {path: a, endpoint: http://h, types: [\(many)]}\n").contains("folders[0].types names more than 1000 docTypes"))
        #expect(refusal("folders: notes\n").contains("folders must be a list"))
        #expect(refusal("").contains("is empty"))
        #expect(refusal("folders: [a, b\n").contains("is not valid YAML"))
        #expect(refusal("folders:\n  - path: a\n    endpoint: http://h\n    endpoint: http://i\n").contains("duplicated key(s): 'endpoint'"))
        #expect(refusal("folders:\n  - path: 'a b'\n    endpoint: http://h\n").contains("the name \"a b\" may hold only"))
    }

    @Test func foldersThatWouldCollideAreRefused() {
        #expect(refusal("folders:\n  - {path: /a/notes, endpoint: http://h}\n  - {path: /b/notes, endpoint: http://i}\n")
            .contains("two folders are named \"notes\": give each a different `name:`"))
        #expect(refusal("folders:\n  - {path: /a, endpoint: http://h}\n  - {name: again, path: /a/, endpoint: http://i}\n")
            .contains("/a is listed twice"))
        #expect(refusal("folders:\n  - {path: /data, endpoint: http://h}\n  - {path: /data/inner, endpoint: http://i}\n")
            .contains("/data/inner (\"inner\") is inside /data (\"data\"): folders may not nest"))
        #expect(refusal("folders:\n  - {path: /data, endpoint: http://h}\n  - {path: /data2, endpoint: http://i}\n") == "accepted")
    }

    /// The deepest, largest and strangest files: an error each, never a crash or a hang.
    @Test func hostileFilesAreRefusedNotFollowed() throws {
        let deep = String(repeating: "[", count: 200_000)
        #expect(refusal("folders: " + deep).contains(":1: nested more than 32 levels deep"))
        #expect(refusal("log_format: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['  # [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\nfolders: [{path: /a, endpoint: http://h}]\n") == "accepted", "brackets in quotes and comments")
        #expect(refusal("a: &x [1, 2]\nb: *x\n").contains("unknown key `a`"))
        let folder = try TempFolder("config")
        defer { folder.remove() }
        try folder.write("big.yaml", "# " + String(repeating: "x", count: AgentConfig.maxBytes) + "\n")
        #expect(throws: ConfigError.self) { try AgentConfig.load(folder.file("big.yaml")) }
        try Data([0x66, 0x6F, 0xFF, 0xFE]).write(to: URL(fileURLWithPath: folder.file("binary.yaml")))
        #expect(throws: ConfigError(file: folder.file("binary.yaml"), "is not UTF-8 text")) { try AgentConfig.load(folder.file("binary.yaml")) }
        do {
            _ = try AgentConfig.load(folder.file("missing.yaml"))
            Issue.record("a missing file was read")
        } catch {
            #expect("\(error)".hasPrefix(folder.file("missing.yaml") + ": cannot be read"))
        }
    }

    /// What `docsync init` writes reads back, whatever the folder and endpoint are called.
    @Test func theTemplateReadsBackWithStrangeNamesAndPaths() throws {
        let path = "/tmp/a \"quoted\" # not a comment: x\\y\ttab"
        let text = ConfigTemplate.header + ConfigTemplate.entry(name: "n.1", path: path, endpoint: "http://h:1", tokenFile: "/t/n.token")
            + ConfigTemplate.entry(name: "two", path: "/tmp/ü/二", endpoint: "http://h:2", tokenFile: "/t/two.token")
        let config = try AgentConfig.parse(text, file: file)
        #expect(config.folders.map(\.path) == [path, "/tmp/ü/二"])
        #expect(config.folders.map(\.endpoint) == ["http://h:1", "http://h:2"])
        #expect(config.logLevel == "info" && config.metricsAddr == nil)
        #expect(ConfigTemplate.defaultPath(environment: ["XDG_CONFIG_HOME": "/x"]) == "/x/docsync/docsync.yaml")
        #expect(ConfigTemplate.defaultPath(environment: ["XDG_CONFIG_HOME": "relative"]) == NSHomeDirectory() + "/.config/docsync/docsync.yaml")
    }
}
