import ArgumentParser
import AsyncHTTPClient
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncIndex
import Foundation
import DocsyncModel
import DocsyncVault
import Logging

/// Making and re-wrapping an encrypted folder's key document on the server (`encrypt init`,
/// `encrypt change-passphrase`, `up --passphrase-file` on a server without one).
enum VaultSetup {
    /// A shorter passphrase is refused: scrypt slows a guess down, it cannot make a short one long.
    static let minimumLength = 10

    /// What opens the current key: the passphrase, or the recovery key.
    enum Unlock {
        case passphrase(String)
        case recovery(String)
    }

    /// Runs `body` with the folder's endpoint (no agent: a one-off request or two).
    static func withEndpoint<T>(
        _ options: EndpointOptions, logger: Logger, _ body: (any DocumentEndpoint) async throws -> T
    ) async throws -> T {
        let client = try makeHTTPClient(caFile: options.caFile.map(absolutePath))
        let context = EndpointContext(clientID: "docsync-vault", clock: ServerClock(logger: logger), requestTimeout: .seconds(30), credential: try options.token())
        let endpoint = try EndpointChoice(url: options.endpoint).adapter.make(client: client, context: context)
        do {
            let result = try await body(endpoint)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// The folder's cursor, when it has an index (never made here).
    static func cursor(root: String) async throws -> SyncCursor? {
        guard FileManager.default.fileExists(atPath: Index.stateDirectory(root: root) + "/index.sqlite") else { return nil }
        return try await Index.open(root: root).read { try $0.meta(.cursor) }.map(SyncCursor.init)
    }

    /// A new key for the folder at `root`, stored on the server wrapped for `passphrase` (refused
    /// when the server holds one already); the recovery key, to be shown once.
    static func create(root: String, endpoint options: EndpointOptions, passphrase: String, cost: ScryptCost, logger: Logger) async throws -> String {
        try await withEndpoint(options, logger: logger) { endpoint in try await create(root: root, endpoint: endpoint, passphrase: passphrase, cost: cost) }
    }

    static func create(root: String, endpoint: any DocumentEndpoint, passphrase: String, cost: ScryptCost = VaultKeys.defaultCost) async throws -> String {
        guard passphrase.count >= minimumLength else {
            throw VaultRefusal("the passphrase is shorter than \(minimumLength) characters: choose a longer one (a few random words)")
        }
        if try await FolderVault.fetch(endpoint) != nil {
            throw VaultRefusal("\(endpoint.location) holds an encrypted folder already: start the agent with --passphrase-file (`encrypt change-passphrase` changes it)")
        }
        let (_, document, recovery) = try VaultKeys.create(passphrase: passphrase, cost: cost)
        // Create only: another agent's key made meanwhile is never overwritten.
        try await store(document, over: nil, endpoint: endpoint, root: root)
        FolderVault.cache(document, root: root)
        return recovery
    }

    /// The folder's key wrapped for `new`; the request body's size in bytes.
    static func rewrap(root: String, endpoint options: EndpointOptions, unlock: Unlock, to new: String, logger: Logger) async throws -> Int {
        try await withEndpoint(options, logger: logger) { endpoint in
            guard let (document, rev) = try await FolderVault.fetch(endpoint) else {
                throw VaultRefusal("\(endpoint.location) holds no encrypted folder (`docsync encrypt init` turns encryption on)")
            }
            let keys: VaultKeys
            do {
                switch unlock {
                case .passphrase(let old): keys = try VaultKeys.open(document, passphrase: old)
                case .recovery(let text): keys = try VaultKeys.open(document, recovery: text)
                }
            } catch {
                throw VaultRefusal("\(root): \(error)")
            }
            let rewrapped = try keys.rewrapped(document, passphrase: new)
            let sent = try await store(rewrapped, over: rev ?? 0, endpoint: endpoint, root: root)
            FolderVault.cache(rewrapped, root: root)
            return sent
        }
    }

    /// Sends the key document over revision `rev` (`nil`: create only); the body's size. An
    /// endpoint whose push also pulls is asked for what follows the folder's cursor only: what
    /// came before (documents in clear, before encryption) is not sent back over the network.
    @discardableResult
    private static func store(_ document: VaultDocument, over rev: Int64?, endpoint: any DocumentEndpoint, root: String) async throws -> Int {
        let body = JSONWriter.string(.object(document.json))
        let change = OutgoingChange(id: SealedForm.vaultID, docType: SealedForm.vaultDocType, body: body, baseRevision: rev)
        let reply = try await endpoint.push([change], pullingAfter: try await cursor(root: root))
        switch reply.outcomes[SealedForm.vaultID] {
        case .storedAsSent?, .stored?: return body.utf8.count
        case .failed(.conflict)?, .failed(.conflictWithOwnWrite)?:
            throw VaultRefusal("the folder's key document changed on \(endpoint.location) meanwhile (another agent): nothing was changed; try again")
        case .failed(let error)?: throw VaultRefusal("\(endpoint.location) refused the folder's key document: \(error)")
        case nil: throw VaultRefusal("\(endpoint.location) did not answer for the folder's key document")
        }
    }
}
