import DocsyncEndpoint
import DocsyncModel

/// An encrypted folder's endpoint: any adapter's, with every document sealed before it leaves
/// and opened when it comes back (``DocumentSeal``), so the server keeps only the envelope in
/// clear (id, docType, revision, stamps, author) and every path by which the server's data reaches
/// the engine — a pull, a push's reply, a conflict's current version, a fetch — gets it opened.
///
/// What cannot be opened (changed on the server, sealed with another key, moved from another
/// document, an older version replayed, or sent in clear) is left out of the reply and reported
/// with its id, as any document the engine cannot take; the rest goes on. The vault's own
/// document is never handed to the engine.
public final class SealedEndpoint: DocumentEndpoint {
    let inner: any DocumentEndpoint
    let seal: DocumentSeal
    let counters: any SealCounters

    /// `inner` sealed with `keys`; the counters are the folder's
    /// (``EndpointContext``). A context without counters (a one-off tool) numbers every version 1
    /// and catches no replay.
    public init(_ inner: any DocumentEndpoint, keys: VaultKeys, context: EndpointContext) {
        self.inner = inner
        self.seal = DocumentSeal(keys, serverMembers: inner.capabilities.serverMembers)
        self.counters = context.sealCounters ?? UncountedSeals()
    }

    public var location: String { inner.location }
    public var capabilities: EndpointCapabilities { inner.capabilities }
    public func useCredential(_ credential: String) { inner.useCredential(credential) }
    public func sampleClock() async throws(EndpointError) { try await inner.sampleClock() }
    public func orders(_ cursor: SyncCursor, after old: SyncCursor) -> Bool { inner.orders(cursor, after: old) }

    public func push(_ changes: [OutgoingChange], pullingAfter cursor: SyncCursor?) async throws(EndpointError) -> PushReply {
        let numbers: [String: Int64]
        do {
            numbers = try await counters.next(changes.map(\.id))
        } catch {
            throw .localFile("numbering sealed versions: \(error)")
        }
        var sealed: [OutgoingChange] = []
        var outcomes: [String: PushOutcome] = [:]
        for change in changes {
            guard case .object(let document)? = try? JSONParser.parse(change.body),
                  let box = try? seal.seal(document, id: change.id, docType: change.docType, number: numbers[change.id] ?? 1)
            else {
                outcomes[change.id] = .failed(.rejected("not a JSON object, or it could not be sealed"))
                continue
            }
            sealed.append(OutgoingChange(id: change.id, docType: change.docType, body: JSONWriter.string(.object(box)), baseRevision: change.baseRevision))
        }
        var reply = try await inner.push(sealed, pullingAfter: cursor)
        // Stored as sent: this folder has seen its own version (one stored whole comes back
        // opened, and is counted as it is opened).
        let stored = reply.outcomes.compactMap { id, outcome in
            if case .storedAsSent = outcome, let number = numbers[id] { (id: id, number: number) } else { nil }
        }
        _ = try? await counters.saw(stored)
        for (id, outcome) in reply.outcomes { outcomes[id] = await opened(outcome) }
        reply.outcomes = outcomes
        if let pulled = reply.pulled { reply.pulled = await opened(pulled) }
        return reply
    }

    public func pull(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        await opened(try await inner.pull(after: cursor, wait: wait))
    }

    public func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject? {
        guard let document = try await inner.fetch(id: id, docType: docType) else { return nil }
        switch await open([document]) {
        case (let opened, _) where !opened.isEmpty: return opened[0]
        case (_, let refused): throw .badReply("document \(id): \(refused.first?.reason ?? "it cannot be opened")")
        }
    }

    /// The documents opened, and those refused (with why).
    func open(_ documents: [JSONObject]) async -> (opened: [JSONObject], refused: [IsolatedElement]) {
        var opened: [(document: JSONObject, number: Int64)] = []
        var refused: [IsolatedElement] = []
        for document in documents where document["docType"]?.string != VaultDocument.docType {
            let id = document["id"]?.string
            guard SealedForm.isSealed(document) else {
                refused.append(IsolatedElement(id: id, reason: "it came in clear to an encrypted folder (anyone who can write to the server could have made it)"))
                continue
            }
            do throws(SealError) {
                opened.append(try seal.open(document))
            } catch {
                refused.append(IsolatedElement(id: id, reason: error.description))
            }
        }
        let versions = opened.compactMap { entry in entry.document["id"]?.string.map { (id: $0, number: entry.number) } }
        // A counter that cannot be read lets the versions through: a replay is caught at the
        // next look, and a refusal here would hold back every document of the reply.
        let replayed = (try? await counters.saw(versions)) ?? []
        for id in replayed.sorted() {
            refused.append(IsolatedElement(id: id, reason: "the server sent an older sealed version of it than this folder has seen (a replay)"))
        }
        return (opened.filter { !replayed.contains($0.document["id"]?.string ?? "") }.map(\.document), refused)
    }

    private func opened(_ reply: PullReply) async -> PullReply {
        var reply = reply
        let (documents, refused) = await open(reply.changes)
        reply.changes = documents
        reply.refused += refused
        return reply
    }

    private func opened(_ outcome: PushOutcome) async -> PushOutcome {
        func one(_ document: JSONObject) async -> JSONObject? { await open([document]).opened.first }
        switch outcome {
        case .storedAsSent: return outcome
        case .stored(let document):
            return await one(document).map { .stored($0) } ?? .failed(.badReply("the stored version cannot be opened"))
        case .failed(.conflict(let current?)):
            return await one(current).map { .failed(.conflict(current: $0)) } ?? .failed(.badReply("the current version cannot be opened"))
        case .failed(.conflictWithOwnWrite(let current)):
            return await one(current).map { .failed(.conflictWithOwnWrite(current: $0)) } ?? .failed(.badReply("the current version cannot be opened"))
        case .failed: return outcome
        }
    }
}

/// Counters for a tool that keeps none: every version is 1, none is a replay.
struct UncountedSeals: SealCounters {
    func next(_ ids: [String]) async throws -> [String: Int64] { Dictionary(ids.map { ($0, 1) }, uniquingKeysWith: { a, _ in a }) }
    func saw(_ versions: [(id: String, number: Int64)]) async throws -> Set<String> { [] }
}
