import Foundation

/// A real Kinto server (from PyPI, installed by `scripts/install-deps.sh` into `.venv-kinto/`) on
/// 127.0.0.1 and a free port, with the memory backend and Kinto's basicauth: each test gets a
/// fresh one and stops it.
public final class KintoServer: Sendable {
    public let url: String
    let process: DocsyncProcess
    let folder: TempFolder

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

    /// Starts one (on `port`, or a free one); returns once it serves.
    public static func start(port: Int = 0) async throws -> KintoServer {
        let folder = try TempFolder("kinto")
        try folder.write("kinto.ini", ini.replacingOccurrences(of: "port = 0", with: "port = \(port)"))
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ProcessFailure("no Kinto at \(executable): run scripts/install-deps.sh (it installs Kinto into .venv-kinto/)")
        }
        let process = try DocsyncProcess(
            executable: executable, arguments: ["start", "--ini", folder.file("kinto.ini")], logDirectory: folder.path, name: "kinto")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let line = process.stderr.split(separator: "\n").first(where: { $0.hasPrefix("Serving on http://") }) {
                return KintoServer(url: line.dropFirst("Serving on ".count) + "/v1", process: process, folder: folder)
            }
            guard process.isRunning else { throw ProcessFailure("Kinto exited: \(process.stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.signal(SIGKILL)
        throw ProcessFailure("Kinto did not start within 60 s: \(process.stderr.suffix(2000))")
    }

    init(url: String, process: DocsyncProcess, folder: TempFolder) {
        self.url = url
        self.process = process
        self.folder = folder
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
