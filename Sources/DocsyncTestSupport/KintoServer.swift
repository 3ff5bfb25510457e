import Foundation

/// A real Kinto server (from PyPI, installed by `scripts/install-deps.sh` into `.venv-kinto/`) on
/// 127.0.0.1 and a free port, with the memory backend and Kinto's basicauth: each test gets a
/// fresh one and stops it. With `attachments`, the kinto-attachment plugin stores files in a
/// folder that a static file server (Python's `http.server`, as Kinto serves none) publishes.
public final class KintoServer: Sendable {
    public let url: String
    let process: DocsyncProcess
    let folder: TempFolder
    /// The static server of the attachment folder, when there is one.
    let files: DocsyncProcess?

    /// `$DOCSYNC_KINTO`, else `.venv-kinto/bin/kinto` in the checkout the tests were built in.
    public static var executable: String {
        if let bin = ProcessInfo.processInfo.environment["DOCSYNC_KINTO"] { return bin }
        var dir = URL(fileURLWithPath: DocsyncProcess.binary).deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent(".venv-kinto/bin/kinto").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return "kinto"
    }

    /// Starts one (on `port`, or a free one); returns once it serves. `history`: with Kinto's
    /// history plugin, which records who wrote each version.
    public static func start(port: Int = 0, attachments: Bool = false, history: Bool = false) async throws -> KintoServer {
        let folder = try TempFolder("kinto")
        var settings = ini.replacingOccurrences(of: "port = 0", with: "port = \(port)")
        let files = attachments ? try await fileServer(folder) : nil
        let includes = (attachments ? ["kinto_attachment"] : []) + (history ? ["kinto.plugins.history"] : [])
        if !includes.isEmpty {
            settings = settings.replacingOccurrences(of: "[server:main]", with: "kinto.includes = \(includes.joined(separator: " "))\n\n[server:main]")
        }
        if let files {
            let plugin = """
                attachment.base_path = \(folder.file("attachments"))
                attachment.base_url = \(files.url)
                attachment.extensions = any

                """
            settings = settings.replacingOccurrences(of: "[server:main]", with: plugin + "[server:main]")
        }
        try folder.write("kinto.ini", settings)
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ProcessFailure("no Kinto at \(executable): run scripts/install-deps.sh (it installs Kinto into .venv-kinto/)")
        }
        let process = try DocsyncProcess(
            executable: executable, arguments: ["start", "--ini", folder.file("kinto.ini")], logDirectory: folder.path, name: "kinto")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let line = process.stderr.split(separator: "\n").first(where: { $0.hasPrefix("Serving on http://") }) {
                return KintoServer(url: line.dropFirst("Serving on ".count) + "/v1", process: process, folder: folder, files: files?.process)
            }
            guard process.isRunning else { throw ProcessFailure("Kinto exited: \(process.stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.signal(SIGKILL)
        files?.process.signal(SIGKILL)
        throw ProcessFailure("Kinto did not start within 60 s: \(process.stderr.suffix(2000))")
    }

    /// `python3 -m http.server` on a free port, serving `folder/attachments`.
    static func fileServer(_ folder: TempFolder) async throws -> (process: DocsyncProcess, url: String) {
        try FileManager.default.createDirectory(atPath: folder.file("attachments"), withIntermediateDirectories: true)
        let process = try DocsyncProcess(
            executable: "/usr/bin/python3", arguments: ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", folder.file("attachments")],
            logDirectory: folder.path, name: "kinto-files")
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
            if let start = process.stdout.range(of: "(http://"), let end = process.stdout[start.upperBound...].firstIndex(of: ")") {
                return (process, "http://" + process.stdout[start.upperBound..<end])
            }
            guard process.isRunning else { throw ProcessFailure("the file server exited: \(process.stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.signal(SIGKILL)
        throw ProcessFailure("the file server did not start within 30 s")
    }

    init(url: String, process: DocsyncProcess, folder: TempFolder, files: DocsyncProcess? = nil) {
        self.url = url
        self.process = process
        self.folder = folder
        self.files = files
    }

    /// The `--endpoint` for `bucket`.
    public func endpoint(bucket: String) -> String { "kinto+" + url + "/buckets/" + bucket }

    /// Stops this one and starts another on the same port: with the memory backend, a server that
    /// lost everything.
    public func restarted() async throws -> KintoServer {
        let port = Int(url.split(separator: ":").last!.split(separator: "/").first!)!
        await stop()
        return try await Self.start(port: port)
    }

    public func stop() async {
        await process.stop()
        await files?.stop()
        folder.remove()
    }

    static var ini: String {
        """
        [app:main]
        use = egg:kinto
        kinto.storage_backend = kinto.core.storage.memory
        kinto.storage_url =
        kinto.cache_backend = kinto.core.cache.memory
        kinto.cache_url =
        kinto.permission_backend = kinto.core.permission.memory
        kinto.permission_url =
        kinto.userid_hmac_secret = docsync-tests
        multiauth.policies = basicauth
        kinto.bucket_create_principals = system.Authenticated

        [server:main]
        use = egg:waitress#main
        host = 127.0.0.1
        port = 0

        [loggers]
        keys = root, waitress
        [handlers]
        keys = console
        [formatters]
        keys = generic
        [logger_root]
        level = WARN
        handlers = console
        [logger_waitress]
        level = INFO
        handlers =
        qualname = waitress
        [handler_console]
        class = StreamHandler
        args = (sys.stderr,)
        level = NOTSET
        formatter = generic
        [formatter_generic]
        format = %(message)s

        """
    }
}
