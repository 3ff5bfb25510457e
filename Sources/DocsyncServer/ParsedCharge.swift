import DocsyncModel
import Hummingbird
import Synchronization

/// The memory a request's parsed body takes, held in the body budget (``BodyBudget``) beside
/// the bytes it was parsed from, until the request is answered. A parsed value takes tens of
/// bytes, and in a document an array may take one byte of text: 27 MB of documents 250 arrays
/// deep, each within the depth and size limits, made 867 MiB of values in one batch request
/// (`scripts/tree-amplification.sh`), and a few such requests at once would take the server
/// down. The parse is charged as it goes (``JSONParser/parseCharging(_:maxDepth:maxValues:charge:)``),
/// ``bytesPerValue`` a value.
final class ParsedCharge: Sendable {
    /// The charge of the request being handled (``ParsedChargeMiddleware``).
    @TaskLocal static var current: ParsedCharge?
    /// What a parsed value is charged: an array holding one value is an allocation of 64 bytes.
    static let bytesPerValue = 64

    enum Refusal: Sendable { case busy, tooLarge(capacity: Int) }

    private struct Held {
        var budget: BodyBudget?
        var bytes = 0
        var refusal: Refusal?
    }

    private let held = Mutex(Held())

    /// Takes `values`' worth from `budget`, where `alsoHeld` bytes of it are the request's own
    /// already (its body); `false` when there is no room (``refusal`` says why).
    func take(values: Int, from budget: BodyBudget, alsoHeld: Int) -> Bool {
        let bytes = values * Self.bytesPerValue
        return held.withLock { h in
            if h.bytes + bytes + alsoHeld > budget.capacity {
                h.refusal = .tooLarge(capacity: budget.capacity)
                return false
            }
            guard budget.take(bytes) else {
                h.refusal = .busy
                return false
            }
            h.budget = budget
            h.bytes += bytes
            return true
        }
    }

    /// Why the last take failed.
    var refusal: Refusal? { held.withLock { $0.refusal } }

    /// Gives back everything taken.
    func release() {
        let (budget, bytes) = held.withLock { h in
            defer { h.bytes = 0 }
            return (h.budget, h.bytes)
        }
        budget?.give(bytes)
    }
}

/// Holds each request's ``ParsedCharge`` while it is handled, and gives it back once answered.
struct ParsedChargeMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let charge = ParsedCharge()
        defer { charge.release() }
        return try await ParsedCharge.$current.withValue(charge) { try await next(request, context) }
    }
}
