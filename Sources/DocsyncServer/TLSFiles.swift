import DocsyncStore
import DocsyncModel
import NIOSSL
import Synchronization

/// The certificate chain and private key `docsync serve` speaks TLS with (`--tls-cert`,
/// `--tls-key`, both PEM). Loaded once at start: a file that cannot be read or parsed stops the
/// server with its name, rather than it falling back to plain HTTP.
public struct TLSFiles: Sendable {
    public var certificate: String
    public var key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }

    /// What is wrong with the certificate's dates at `now` (Unix seconds): expired, or not valid
    /// yet; `nil` when it is valid. The server still starts (a renewal may be on its way), but
    /// says so: clients will refuse it.
    public func validityProblem(now: Int64) throws -> String? {
        guard let leaf = try NIOSSLCertificate.fromPEMFile(certificate).first else { return "no certificate in \(certificate)" }
        let (from, until) = (Int64(leaf.notValidBefore), Int64(leaf.notValidAfter))
        func date(_ t: Int64) -> String { String(Timestamp(unixMilliseconds: t * 1000).rfc3339.prefix(19)) + "Z" }
        if now > until { return "the TLS certificate \(certificate) expired at \(date(until)); clients will refuse it" }
        if now < from { return "the TLS certificate \(certificate) is not valid before \(date(from)); clients will refuse it" }
        return nil
    }

    /// The chain and key as the files hold them now.
    func load() throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw TLSFileError("cannot read the TLS certificate \(certificate): \(error)")
        }
        guard !chain.isEmpty else { throw TLSFileError("no certificate in \(certificate)") }
        do {
            return (chain, try NIOSSLPrivateKey(file: key, format: .pem))
        } catch {
            throw TLSFileError("cannot read the TLS private key \(key): \(error)")
        }
    }

    /// The server's TLS configuration: the files' chain and key, and, on every handshake, the
    /// ones `reloader` holds now (a renewed certificate is taken on SIGHUP, without a restart).
    func configuration(reloader: TLSReloader) throws -> TLSConfiguration {
        let (chain, privateKey) = try load()
        reloader.set(chain: chain, key: privateKey)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.sslContextCallback = { _, promise in promise.succeed(reloader.override()) }
        return configuration
    }
}

/// The certificate chain and key new TLS connections are given, replaced by ``reload(_:)``.
public final class TLSReloader: Sendable {
    private let current = Mutex<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)?>(nil)

    func set(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) { current.withLock { $0 = (chain, key) } }

    /// The files read again: a chain or key that cannot be read leaves the ones in use (the error
    /// says why); nil when they were taken.
    func reload(_ files: TLSFiles) -> String? {
        do {
            let (chain, key) = try files.load()
            set(chain: chain, key: key)
            return nil
        } catch {
            return "\(error); the certificate in use stays"
        }
    }

    func override() -> NIOSSLContextConfigurationOverride {
        var override = NIOSSLContextConfigurationOverride()
        if let (chain, key) = current.withLock({ $0 }) {
            override.certificateChain = chain.map { .certificate($0) }
            override.privateKey = .privateKey(key)
        }
        return override
    }
}

/// A TLS certificate or key file that cannot be read or holds nothing usable: said at start, and
/// when a reload finds it so (the old pair is kept).
struct TLSFileError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
