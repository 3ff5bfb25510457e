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

    private let store: any DocumentStore
    private let assertFormats: Bool
    private let state = Mutex(State())

    init(store: any DocumentStore, assertFormats: Bool) {
        self.store = store
        self.assertFormats = assertFormats
    }

    /// Called after a write of `docType`: a schema written makes the next check read them again.
    func wrote(docType: String?) {
        guard docType == DocTypeSchemas.docType else { return }
        state.withLock { $0.loadedAt = nil }
    }

    /// Throws 422 with the violations when `object` fails.
    func check(_ object: JSONObject) async throws {
        if let errors = try await violations(of: object) { throw Self.refusal(errors, of: object) }
    }

    /// The batch's documents that may be written, and an error entry for each refused one.
    func partition(_ documents: [JSONValue]) async throws -> (accepted: [JSONValue], refused: [JSONObject]) {
        var accepted: [JSONValue] = [], refused: [JSONObject] = []
        for document in documents {
            guard case .object(let object) = document, let errors = try await violations(of: object) else {
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

    /// Why `object` may not be written, or nil. Tombstones are never refused.
    private func violations(of object: JSONObject) async throws -> [SchemaViolation]? {
        guard object[DocumentRules.deletedAtKey] == nil || object[DocumentRules.deletedAtKey] == .null,
              case .string(let docType)? = object["docType"] else { return nil }
        if docType == DocTypeSchemas.docType {
            let errors = DocTypeSchemas.violations(ofSchemaDocument: object["id"]?.string ?? "", object)
            return errors.isEmpty ? nil : errors
        }
        let errors = try await schemas().violations(of: object, docType: docType)
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
        let loaded = DocTypeSchemas(try await load(), assertFormats: assertFormats)
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
