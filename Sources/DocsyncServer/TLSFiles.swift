import NIOSSL

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

    func configuration() throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw StoreError(500, "cannot read the TLS certificate \(certificate): \(error)")
        }
        guard !chain.isEmpty else { throw StoreError(500, "no certificate in \(certificate)") }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        } catch {
            throw StoreError(500, "cannot read the TLS private key \(key): \(error)")
        }
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
    }
}
