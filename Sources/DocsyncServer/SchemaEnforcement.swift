import DocsyncStore
import DocsyncModel
import DocsyncSchema
import Synchronization

/// `serve --enforce-schemas`: a write of a document whose docType has a stored schema, and that
/// fails it, is refused for that document alone (422 on the single routes, the batch call's
/// per-document error), with the violations; so is a schema document that is not a valid schema.
///
/// The schemas are the store's documents of docType `schema`, read again after this server
/// writes one, and at most every ``externalRecheck`` when other servers write to the same
/// database (their writes reach this one's schemas within that time).
final class SchemaEnforcement: Sendable {
    static let externalRecheck: Duration = .seconds(2)
    /// Schema documents read per query while loading.
    static let pageSize = 500

    private struct State {
        var schemas = DocTypeSchemas()
        var loadedAt: ContinuousClock.Instant?
    }

    /// What the checks of one request may do together: a batch of documents that each spend
    /// their whole budget ends in about a second; past it, its other documents are refused with
    /// that reason (an ordinary batch uses a small part of one document's budget).
    static let requestBudget = 10 * CheckBudget.perDocument

    private let store: any DocumentStore
    private let assertFormats: Bool
    private let state = Mutex(State())
    private let pool: CheckPool

    init(store: any DocumentStore, assertFormats: Bool, pool: CheckPool = CheckPool()) {
        self.store = store
        self.assertFormats = assertFormats
        self.pool = pool
    }

    /// Called after a write of `docType`: a schema written makes the next check read them again.
    func wrote(docType: String?) {
        guard docType == DocTypeSchemas.docType else { return }
        state.withLock { $0.loadedAt = nil }
    }

    /// Throws 422 with the violations when `object` fails.
    func check(_ object: JSONObject) async throws {
        let schemas = try await schemas()
        let errors = try await pool.run {
            var budget = CheckBudget()
            return Self.violations(of: object, schemas, budget: &budget)
        }
        if let errors { throw Self.refusal(errors, of: object) }
    }

    /// The batch's documents that may be written, and an error entry for each refused one. Each
    /// document takes its own turn in the pool, so other requests' checks go between them.
    func partition(_ documents: [JSONValue]) async throws -> (accepted: [JSONValue], refused: [JSONObject]) {
        let schemas = try await schemas()
        var accepted: [JSONValue] = [], refused: [JSONObject] = []
        var left = Self.requestBudget
        for document in documents {
            guard case .object(let object) = document, Self.needsCheck(object) else {
                accepted.append(document)
                continue
            }
            let units = min(CheckBudget.perDocument, left)
            let (errors, spent) = try await pool.run { () -> ([SchemaViolation]?, Int) in
                var budget = CheckBudget(units)
                let before = budget.remaining
                return (Self.violations(of: object, schemas, budget: &budget), before - budget.remaining)
            }
            left -= spent
            guard let errors else {
                accepted.append(document)
                continue
            }
            let refusal = Self.refusal(errors, of: object)
            refused.append(JSONObject([
                (key: "id", value: object["id"] ?? .null), (key: "message", value: .string(refusal.message)), (key: "errors", value: refusal.errors ?? .null),
            ]))
        }
        return (accepted, refused)
    }

    /// Tombstones and documents without a docType are never refused; nor are sealed documents
    /// (end to end encrypted: the server cannot read them, their agents check them).
    private static func needsCheck(_ object: JSONObject) -> Bool {
        (object[DocumentRules.deletedAtKey] == nil || object[DocumentRules.deletedAtKey] == .null) && object["docType"]?.string != nil
            && !SealedForm.isSealed(object)
    }

    /// Why `object` may not be written, or nil.
    private static func violations(of object: JSONObject, _ schemas: DocTypeSchemas, budget: inout CheckBudget) -> [SchemaViolation]? {
        guard needsCheck(object), case .string(let docType)? = object["docType"] else { return nil }
        if docType == DocTypeSchemas.docType {
            let errors = DocTypeSchemas.violations(ofSchemaDocument: object["id"]?.string ?? "", object, budget: &budget)
            return errors.isEmpty ? nil : errors
        }
        let errors = schemas.violations(of: object, docType: docType, budget: &budget)
        return errors?.isEmpty == false ? errors : nil
    }

    private static func refusal(_ errors: [SchemaViolation], of object: JSONObject) -> HTTPRefusal {
        let first = errors.first.map(\.description) ?? ""
        let what = DocTypeSchemas.failing(docType: object["docType"]?.string ?? "")
        return HTTPRefusal(422, "\(what): \(first)" + (errors.count > 1 ? " (and \(errors.count - 1) more)" : ""), errors: .array(errors.map(\.json)))
    }

    private func schemas() async throws -> DocTypeSchemas {
        let now = ContinuousClock.now
        let current = state.withLock { state -> DocTypeSchemas? in
            guard let loadedAt = state.loadedAt else { return nil }
            return store.followsExternalChanges && now - loadedAt > Self.externalRecheck ? nil : state.schemas
        }
        if let current { return current }
        let bodies = try await load()
        let assertFormats = self.assertFormats
        // Compiling is work of the same kind as checking, and is bounded by the schemas' sizes.
        let loaded = try await pool.run { DocTypeSchemas(bodies, assertFormats: assertFormats) }
        state.withLock { $0 = State(schemas: loaded, loadedAt: now) }
        return loaded
    }

    private func load() async throws -> [String: JSONObject] {
        var bodies: [String: JSONObject] = [:]
        var after = ""
        while true {
            let page = try await store.list(docType: DocTypeSchemas.docType, includeDeleted: false, after: after, limit: Self.pageSize)
            for (id, body) in page {
                if case .object(let object)? = try? JSONParser.parse(body) { bodies[id] = object }
            }
            guard page.count == Self.pageSize, let last = page.last else { return bodies }
            after = last.id
        }
    }
}
