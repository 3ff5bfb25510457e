import DocsyncModel
import DocsyncStore
import Synchronization

/// Once the store holds an encrypted folder's wrapped key (the `docsync-vault` document,
/// docs/ENCRYPTION.md), a document in clear is refused: an agent started without the passphrase
/// cannot leak the folder's contents into the server, and a sealed document may carry nothing in
/// clear beside its envelope. The key document itself cannot be deleted.
///
/// Whether a vault exists is read from the store until one does (another server on the same
/// database may have written it), and then kept: it is never removed.
final class VaultGuard: Sendable {
    private let store: any DocumentStore
    private let sealed = Atomic<Bool>(false)

    init(store: any DocumentStore) { self.store = store }

    static let clearRefused =
        "this server holds an end-to-end encrypted folder (docs/ENCRYPTION.md): a document must be sent sealed; start the agent with --passphrase-file"

    /// Whether the folder is encrypted.
    func isSealed() async throws -> Bool {
        if sealed.load(ordering: .relaxed) { return true }
        guard try await store.get(id: SealedForm.vaultID) != nil else { return false }
        sealed.store(true, ordering: .relaxed)
        return true
    }

    /// Why `object` may not be written, or `nil`.
    func problem(with object: JSONObject) async throws -> String? {
        Self.problem(with: object, sealed: SealedForm.isVault(object) ? false : try await isSealed())
    }

    /// The same, with whether the folder is encrypted known (read once for a batch).
    private static func problem(with object: JSONObject, sealed: Bool) -> String? {
        if SealedForm.isVault(object) {
            guard object["id"]?.string == SealedForm.vaultID else { return "the key document's id must be \(SealedForm.vaultID)" }
            let deleted = object[DocumentRules.deletedAtKey].map { !$0.isNull } ?? false
            return deleted ? "the encrypted folder's key document cannot be deleted" : nil
        }
        guard sealed else { return nil }
        guard SealedForm.isSealed(object) else { return Self.clearRefused }
        if let member = SealedForm.clearMember(of: object) { return "a sealed document carries nothing in clear beside its envelope (\(member))" }
        return nil
    }

    /// Throws 422 when `object` may not be written (the single routes).
    func check(_ object: JSONObject) async throws {
        if let problem = try await problem(with: object) { throw HTTPRefusal(422, problem) }
    }

    /// A deletion through `DELETE /api/document`: refused for the key document.
    func checkDeletion(docType: String) throws {
        if docType == SealedForm.vaultDocType { throw HTTPRefusal(422, "the encrypted folder's key document cannot be deleted") }
    }

    /// An upload into `property`: in an encrypted folder only a sealed file's property.
    func checkUpload(property: String) async throws {
        if try await isSealed(), !property.hasPrefix(SealedForm.filePropertyPrefix) { throw HTTPRefusal(422, Self.clearRefused) }
    }

    /// The batch's documents that may be written, and an error entry for each refused one.
    func partition(_ documents: [JSONValue]) async throws -> (accepted: [JSONValue], refused: [JSONObject]) {
        var accepted: [JSONValue] = [], refused: [JSONObject] = []
        let sealed = try await isSealed()
        for document in documents {
            guard case .object(let object) = document, let problem = Self.problem(with: object, sealed: sealed) else {
                accepted.append(document)
                continue
            }
            refused.append(StoreRules.batchError(id: object["id"]?.string, StoreError(.invalid, problem)))
        }
        return (accepted, refused)
    }
}
