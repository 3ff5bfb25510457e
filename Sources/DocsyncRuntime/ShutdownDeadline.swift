import Foundation
import Logging
import ServiceLifecycle

/// SIGTERM ends the process within ``limit``, whatever it is doing: graceful shutdown gets that
/// long, then the process exits on its own. Nothing is lost by it: every change the agent or the
/// server accepted is committed to its database before it is acknowledged, and a kill at any
/// instant is already survived (`CrashTests`). Last in a group's list, so that graceful shutdown,
/// which goes from the last service to the first, arms it before anything else.
struct ShutdownDeadline: Service {
    /// systemd's default stop timeout is 90 s; a user's Ctrl-C or a script's kill expects less.
    static let limit: Duration = .milliseconds(4500)
    let logger: Logger

    func run() async throws {
        // Returns when graceful shutdown begins (or the task is cancelled, which ends the process too).
        try? await gracefulShutdown()
        let logger = self.logger
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: Double(Self.limit.components.seconds) + Double(Self.limit.components.attoseconds) / 1e18)
            logger.error("still stopping \(Self.limit) after the signal; exiting now (every accepted change is already committed)")
            _exit(0)
        }
    }
}

/// The group every command that runs until a signal uses: SIGTERM and SIGINT shut it down
/// gracefully, the deadline bounds how long that takes.
public func signalledGroup(_ services: [ServiceGroupConfiguration.ServiceConfiguration], logger: Logger) -> ServiceGroup {
    ServiceGroup(configuration: .init(
        services: services + [.init(service: ShutdownDeadline(logger: logger), successTerminationBehavior: .ignore)],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
}
