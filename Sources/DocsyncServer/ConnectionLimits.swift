#if canImport(Glibc)
import Glibc
#endif
import DocsyncModel
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// What keeps `docsync serve` answering while clients misbehave: a connection that has not sent a
/// whole request head within `headerTimeout` is closed, an idle keep-alive connection after
/// `idleTimeout`, a request body must keep arriving at `minimumBodyRate` (after a grace period),
/// and no more than `maxConnections` are served at once (the rest wait in the kernel's backlog).
///
/// Before, 1,100 connections that never finished their headers took every file descriptor of a
/// process limited to 1,024 and locked every user out; a body trickled at a byte every two seconds
/// was read for as long as it took; idle sockets stayed open for ever.
public struct ConnectionLimits: Sendable {
    public var headerTimeout: Duration = .seconds(10)
    /// Longer than the agent's own keep-alive (60 s), so the agent closes first and never sends a
    /// request on a connection the server is closing.
    public var idleTimeout: Duration = .seconds(75)
    /// Bytes per second a body must average once `bodyGrace` has passed.
    public var minimumBodyRate = 16 << 10
    public var bodyGrace: Duration = .seconds(10)
    /// `nil`: derived from the process's file limit (see `FileSystem.raiseFileLimit()`).
    public var maxConnections: Int?
    /// What every request body being read holds, together: past it, a body is refused (503) as it
    /// arrives, instead of 40 endless bodies of 64 MiB each holding gigabytes between them.
    public var bodyBudget = BodyBudget(bytes: 256 << 20)

    public init() {}

    /// Connections served at once: what the file limit leaves after a reserve for the store, the
    /// uploads and the log, and at most 16,384.
    var connectionCap: Int {
        if let maxConnections { return maxConnections }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return max(64, min(16_384, Int(clamping: limit.rlim_cur) - 128))
    }

    var server: HTTPServerBuilder {
        let timeout = headerTimeout
        return .http1(configuration: .init(
            additionalChannelHandlers: [HeaderTimeoutHandler(timeout: timeout)], idleTimeout: .nanoseconds(idleTimeout.wholeNanoseconds)))
    }

    /// Checks a body's pace as its pieces arrive; throws 408 for one too slow to be a real client.
    struct BodyPace {
        let limits: ConnectionLimits
        let start = ContinuousClock.now
        var received = 0

        mutating func add(_ bytes: Int) throws(HTTPRefusal) {
            received += bytes
            let elapsed = ContinuousClock.now - start
            guard elapsed > limits.bodyGrace else { return }
            let seconds = Double(elapsed.wholeNanoseconds) / 1e9
            if Double(received) < Double(limits.minimumBodyRate) * seconds {
                throw HTTPRefusal(408, "the request body arrives slower than \(limits.minimumBodyRate) bytes a second")
            }
        }
    }
}

/// Closes a connection whose first request head has not arrived within `timeout` (the idle
/// timeout covers the time between requests). Removed from the pipeline once the head is read.
final class HeaderTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    let timeout: Duration
    private var timer: Scheduled<Void>?

    init(timeout: Duration) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(timeout.wholeNanoseconds)) {
            loopBound.value.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let isHead = if case .head = unwrapInboundIn(data) { true } else { false }
        context.fireChannelRead(data)
        if isHead {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}

/// The address the server listens on, known once it is bound (port 0 picks one).
final class ListeningAddress: Sendable {
    private let value = Mutex("http://localhost")

    var url: String { value.withLock { $0 } }

    /// A wildcard address (`0.0.0.0`, `::`) names no host a client can reach: the machine's
    /// host name stands in (`--public-url` says it better).
    func set(scheme: String, host: String, port: Int) {
        var name = host
        if host == "0.0.0.0" || host == "::" || host.isEmpty {
            var buffer = [CChar](repeating: 0, count: 256)
            name = gethostname(&buffer, buffer.count) == 0
                ? String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
        }
        if name.contains(":") && !name.hasPrefix("[") { name = "[\(name)]" }
        value.withLock { $0 = "\(scheme)://\(name):\(port)" }
    }
}

/// Bytes of request bodies held in memory at once, across all requests (see
/// ``ConnectionLimits/bodyBudget``).
public final class BodyBudget: Sendable {
    public let capacity: Int
    private let held = Mutex(0)

    public init(bytes: Int) { capacity = bytes }

    /// Takes `bytes` of the budget; `false` (nothing taken) when that would pass its capacity.
    func take(_ bytes: Int) -> Bool {
        held.withLock { held in
            guard held + bytes <= capacity else { return false }
            held += bytes
            return true
        }
    }

    func give(_ bytes: Int) { held.withLock { $0 -= bytes } }

    /// Bytes held now.
    public var inUse: Int { held.withLock { $0 } }
}
