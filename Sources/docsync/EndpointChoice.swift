import ArgumentParser
import AsyncHTTPClient
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncKinto
import DocsyncPingPong
import DocsyncSyncRails
import DocsyncVault

/// The adapter an `--endpoint` URL selects. Each adapter target reads its own URL form
/// (``HTTPAdapter``); this list is the one place that knows every adapter: a new one adds a line.
struct EndpointChoice {
    static let adapters: [any HTTPAdapter.Type] = [PingPongAdapter.self, SyncRailsAdapter.self, KintoAdapter.self]

    let adapter: any HTTPAdapter

    init(url: String) throws {
        guard let adapter = try Self.adapter(for: url) else {
            throw ValidationError("--endpoint must be one of \(Self.adapters.map { $0.forms }.joined(separator: ", ")), got '\(url)'")
        }
        self.adapter = adapter
    }

    /// The first adapter of the list that takes `url`; its refusal said as a usage error.
    private static func adapter(for url: String) throws -> (any HTTPAdapter)? {
        for kind in adapters {
            do {
                if let chosen = try kind.choose(url) { return chosen }
            } catch let error as EndpointURLError {
                throw ValidationError(error.description)
            }
        }
        return nil
    }

    init(_ adapter: any HTTPAdapter) { self.adapter = adapter }

    /// Makes the adapter for one folder; with `keys`, an encrypted folder's: every document and
    /// file sealed on its way out and opened on its way in (``SealedEndpoint``).
    func factory(client: HTTPClient, sealedWith keys: VaultKeys? = nil) -> @Sendable (EndpointContext) -> any DocumentEndpoint {
        let adapter = self.adapter
        return { context in
            let endpoint = adapter.make(client: client, context: context)
            return keys.map { SealedEndpoint(endpoint, keys: $0, context: context) } ?? endpoint
        }
    }
}
