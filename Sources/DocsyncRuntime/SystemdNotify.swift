import DocsyncAgent
import DocsyncIndex
import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// systemd's notify protocol (sd_notify(3)) without libsystemd: one datagram of `KEY=VALUE` lines
/// to the socket named by `$NOTIFY_SOCKET` (`@name` is the abstract namespace). Without the
/// variable (not started by systemd with `Type=notify`), every call does nothing.
public struct SystemdNotifier: Sendable {
    let socketPath: String?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public var isActive: Bool { socketPath != nil }

    /// Sends `state` (e.g. `READY=1\nSTATUS=…`); false when it could not be sent.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, length) }
        }
        return sent == bytes.count
    }

    /// Half of `$WATCHDOG_USEC`, when the unit asks for keep-alives (`WatchdogSec=`) and they are
    /// meant for this process (`$WATCHDOG_PID` unset or ours).
    static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return .microseconds(usec / 2)
    }
}

/// Tells systemd how the agent is doing: `READY=1` once the first scan has queued the folder's
/// changes, a `STATUS=` line as the counts change, `WATCHDOG=1` at half the watchdog interval,
/// `STOPPING=1` when asked to stop.
public struct SystemdAgentService: Service {
    let notifier: SystemdNotifier
    /// The folders the process syncs; READY=1 goes out once every one is watched.
    let folders: [LiveStatus]
    let ready: AsyncStream<Void>

    public init(notifier: SystemdNotifier, folders: [LiveStatus], ready: AsyncStream<Void>) {
        (self.notifier, self.folders, self.ready) = (notifier, folders, ready)
    }

    public func run() async throws {
        // Until graceful shutdown begins: this service is the last one made, so it is the first
        // told, and STOPPING=1 goes out as the agent starts to stop.
        try? await cancelWhenGracefulShutdown {
            var readiness = ready.makeAsyncIterator()
            for _ in folders { guard await readiness.next() != nil else { return } }
            notifier.notify("READY=1\nSTATUS=\(await Self.summary(folders))")
            let watchdog = SystemdNotifier.watchdogInterval()
            let beat = min(watchdog ?? .seconds(10), .seconds(10))
            var last = ""
            while !Task.isCancelled {
                try await Task.sleep(for: beat)
                let status = await Self.summary(folders)
                var message = watchdog != nil ? "WATCHDOG=1" : ""
                if status != last { message += (message.isEmpty ? "" : "\n") + "STATUS=\(status)" }
                last = status
                if !message.isEmpty { notifier.notify(message) }
            }
        }
        notifier.notify("STOPPING=1\nSTATUS=stopping")
    }

    /// One line for `systemctl status`: the counts `docsync status` starts with, per folder when
    /// there are several, read from each agent's own index.
    static func summary(_ folders: [LiveStatus]) async -> String {
        var parts: [String] = []
        for folder in folders {
            let line = await summary(folder.index)
            parts.append(folders.count > 1 ? "\(folder.name): \(line)" : line)
        }
        return parts.joined(separator: "; ")
    }

    static func summary(_ index: Index?) async -> String {
        guard let index, let status = try? await AgentStatus.read(index) else { return "starting" }
        let c = status.counts
        var line = "\(c.synced) synced, \(c.pending) pending"
        if c.invalid > 0 { line += ", \(c.invalid) invalid" }
        if c.rejected > 0 { line += ", \(c.rejected) rejected" }
        if status.offlineSince != nil { line += ", endpoint unreachable" }
        if let paused = status.paused { line += ", paused: \(paused)" }
        return line
    }
}

/// `docsync serve` under systemd: `READY=1` once it listens, `WATCHDOG=1` while it runs (when
/// asked for), `STOPPING=1` when asked to stop.
public struct SystemdServeService: Service {
    let notifier: SystemdNotifier
    let listening: AsyncStream<String>

    public init(notifier: SystemdNotifier, listening: AsyncStream<String>) {
        (self.notifier, self.listening) = (notifier, listening)
    }

    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var iterator = listening.makeAsyncIterator()
            guard let url = await iterator.next() else { return }
            notifier.notify("READY=1\nSTATUS=serving \(url)")
            let watchdog = SystemdNotifier.watchdogInterval()
            while !Task.isCancelled {
                try await Task.sleep(for: watchdog ?? .seconds(3600))
                if watchdog != nil { notifier.notify("WATCHDOG=1") }
            }
        }
        notifier.notify("STOPPING=1\nSTATUS=stopping")
    }
}
