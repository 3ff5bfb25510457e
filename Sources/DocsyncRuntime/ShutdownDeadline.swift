import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// SIGTERM ends the process within ``limit``, whatever it is doing: graceful shutdown gets that
/// long, then the process exits on its own. Nothing is lost by it: every change the agent or the
/// server accepted is committed to its database before it is acknowledged, and a kill at any
/// instant is already survived (`CrashTests`). Last in a group's list, so that graceful shutdown,
/// which goes from the last service to the first, arms it before anything else.
///
/// The countdown starts at the signal itself, from a signal source on a queue of its own: the
/// graceful shutdown's tasks wait for the cooperative pool, which a process deep in CPU-bound
/// work (checking a costly schema) on a loaded machine may not give them for seconds. The
/// service arms it too, for a graceful shutdown that no signal began.
struct ShutdownDeadline: Service {
    /// systemd's default stop timeout is 90 s; a user's Ctrl-C or a script's kill expects 5 s at
    /// most, and the exit itself takes a moment on a loaded machine: with 4 s here, a CI run with
    /// its checks beside the suite once saw a server end over 5 s after the signal (the countdown
    /// starts when the signal's handler runs, itself late on a loaded machine).
    static let limit: Duration = .seconds(3)
    let logger: Logger

    func run() async throws {
        // Returns when graceful shutdown begins (or the task is cancelled, which ends the process too).
        try? await gracefulShutdown()
        Self.arm(logger)
    }

    private static let armed = Mutex(false)
    /// Signal sources live as long as the process (a released source stops listening).
    private static let sources = Mutex<[Retained]>([])
    private final class Retained: @unchecked Sendable {  // set once; a source is thread-safe
        let sources: [any DispatchSourceSignal]
        init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
    }

    /// Starts the countdown (once): after ``limit`` the process exits.
    static func arm(_ logger: Logger) {
        guard !armed.withLock({ was in defer { was = true }; return was }) else { return }
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
            logger.error("still stopping \(limit) after the signal; exiting now (every accepted change is already committed)")
            _exit(0)
        }
    }

    /// Arms the countdown at SIGTERM or SIGINT. The group's own signal handling is left as it is
    /// (a signal has every source made for it told).
    static func armOnSignals(_ logger: Logger) {
        let queue = DispatchQueue(label: "docsync.shutdown-deadline")
        let made = [SIGTERM, SIGINT].map { signal in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { arm(logger) }
            source.resume()
            return source
        }
        sources.withLock { $0.append(Retained(made)) }
    }
}

/// The group every command that runs until a signal uses: SIGTERM and SIGINT shut it down
/// gracefully, the deadline bounds how long that takes.
public func signalledGroup(_ services: [ServiceGroupConfiguration.ServiceConfiguration], logger: Logger) -> ServiceGroup {
    let group = ServiceGroup(configuration: .init(
        services: services + [.init(service: ShutdownDeadline(logger: logger), successTerminationBehavior: .ignore)],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    ShutdownDeadline.armOnSignals(logger)  // after the group, which sets the signals' disposition
    return group
}
