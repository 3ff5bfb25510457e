import ArgumentParser
import DocsyncAgent
import DocsyncEndpoint
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import DocsyncVault
import Foundation
import AsyncHTTPClient
import DocsyncClock
import DocsyncHTTP
import Logging

/// An encrypted folder's key, as the commands that run an agent get it (docs/ENCRYPTION.md): the
/// server's key document (wrapped; cached in `.docsync/vault.json` so that a start offline works),
/// opened with the passphrase before anything is written or sent. A folder without a passphrase
/// whose server holds a key document refuses to start.
enum FolderVault {
    /// The cached copy of the server's key document (it holds the key only wrapped).
    static func cachePath(root: String) -> String { Index.stateDirectory(root: root) + "/vault.json" }

    /// The server's key document and its revision; `nil` when there is none.
    static func fetch(_ endpoint: any DocumentEndpoint) async throws(EndpointError) -> (document: VaultDocument, rev: Int64?)? {
        let found: JSONObject?
        do {
            found = try await endpoint.fetch(id: SealedForm.vaultID, docType: SealedForm.vaultDocType)
        } catch .unsupported {
            found = try await findByPull(endpoint)
        }
        guard let found, found[DocumentRules.deletedAtKey].map({ $0.isNull }) ?? true else { return nil }
        do {
            let rev = DocumentRules.revision(of: found)
            return (try VaultDocument(json: found), rev)
        } catch {
            throw .badReply(error.description)
        }
    }

    /// An endpoint without a route for one document (sync-rails): its changes from the start,
    /// looked through for the key document (once: then it is cached).
    private static func findByPull(_ endpoint: any DocumentEndpoint) async throws(EndpointError) -> JSONObject? {
        var cursor: SyncCursor?
        while true {
            let reply = try await endpoint.pull(after: cursor, wait: nil)
            if let vault = reply.changes.first(where: { $0["id"]?.string == SealedForm.vaultID && SealedForm.isVault($0) }) { return vault }
            guard reply.more, let next = reply.cursor, next != cursor else { return nil }
            cursor = next
        }
    }

    /// The folder's keys: the server's key document (else the cached one, when the server cannot
    /// be reached) opened with `passphrase`. Every failure is said with the folder's path.
    static func keys(root: String, passphrase: String, endpoint: any DocumentEndpoint) async throws -> VaultKeys {
        let document: VaultDocument
        do {
            guard let found = try await fetch(endpoint) else {
                throw VaultRefusal(
                    "\(root): a passphrase was given but \(endpoint.location) holds no encrypted folder (turn encryption on with `docsync encrypt init`; or the token may not read docType \(SealedForm.vaultDocType))")
            }
            document = found.document
        } catch let error as EndpointError where error.isTransient {
            guard let cached = cached(root: root) else {
                throw VaultRefusal("\(root): the folder's key cannot be read from \(endpoint.location) (\(error)) and none is cached here yet")
            }
            document = cached
        } catch let error as EndpointError {
            throw VaultRefusal("\(root): the folder's key cannot be read from \(endpoint.location): \(error)")
        }
        let keys: VaultKeys
        do {
            keys = try VaultKeys.open(document, passphrase: passphrase)
        } catch {
            throw VaultRefusal("\(root): \(error)")
        }
        // Kept once it opens (a start offline reads it): a wrong passphrase leaves nothing behind.
        cache(document, root: root)
        return keys
    }

    /// A folder without a passphrase: refused when its server holds an encrypted folder. A server
    /// that cannot be asked now lets it start (its own refusal of documents in clear, and the
    /// engine's of sealed ones, hold meanwhile).
    static func requireClear(root: String, endpoint: any DocumentEndpoint) async throws {
        let found: (document: VaultDocument, rev: Int64?)?
        do {
            found = try await fetch(endpoint)
        } catch {
            found = nil
        }
        if found != nil || cached(root: root) != nil {
            throw VaultRefusal(
                "\(root): \(endpoint.location) holds an end-to-end encrypted folder; start with --passphrase-file FILE (or DOCSYNC_PASSPHRASE, or passphrase_file: in the config). See docs/ENCRYPTION.md")
        }
    }

    static func cached(root: String) -> VaultDocument? {
        guard let data = FileManager.default.contents(atPath: cachePath(root: root)), data.count < 64 << 10,
              case .object(let object)? = try? JSONParser.parse(Array(data))
        else { return nil }
        return try? VaultDocument(json: object)
    }

    static func cache(_ document: VaultDocument, root: String) {
        try? FileManager.default.createDirectory(atPath: Index.stateDirectory(root: root), withIntermediateDirectories: true)
        _ = try? FileSystem.replace(cachePath(root: root), with: JSONWriter.fileBytes(.object(document.json)), ifItHolds: nil, mode: 0o600)
    }
}

/// The passphrase: the first line of `file`, else `DOCSYNC_PASSPHRASE`; `nil` when neither is
/// given (a folder in clear). Never from the command line, never logged.
func resolvePassphrase(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
    if let file {
        do {
            return try readToken(file: file)
        } catch {
            throw VaultRefusal("cannot read the passphrase from \(file): \(error)".replacingOccurrences(of: "read token from", with: "read"))
        }
    }
    if let env = environment["DOCSYNC_PASSPHRASE"], !env.isEmpty { return env }
    return nil
}

extension FolderVault {
    /// Each folder's keys (`nil` for a folder in clear), read before any agent starts: all folders
    /// at once, so that one slow server does not hold the others' start.
    static func keys(for folders: [WatchPlan.Folder], endpoints: [any HTTPAdapter], client: (Int) -> HTTPClient, logger: Logger) async throws -> [VaultKeys?] {
        try await withThrowingTaskGroup(of: (Int, VaultKeys?).self) { group in
            for (n, folder) in folders.enumerated() {
                let options = folder.options
                let context = EndpointContext(
                    clientID: "docsync-vault", clock: ServerClock(logger: logger), requestTimeout: min(options.requestTimeout, .seconds(10)),
                    credential: options.token)
                let endpoint = endpoints[n].make(client: client(n), context: context)
                let passphrase = folder.passphrase
                group.addTask {
                    guard let passphrase else {
                        try await requireClear(root: options.root, endpoint: endpoint)
                        return (n, nil)
                    }
                    return (n, try await FolderVault.keys(root: options.root, passphrase: passphrase, endpoint: endpoint))
                }
            }
            var opened = [VaultKeys?](repeating: nil, count: folders.count)
            for try await (n, found) in group { opened[n] = found }
            return opened
        }
    }
}

/// Why an encrypted folder's agent does not start, or a key command did nothing: said as it is,
/// without the usage text a mistyped flag gets.
struct VaultRefusal: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
