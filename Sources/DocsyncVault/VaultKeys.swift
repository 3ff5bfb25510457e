import Crypto
import DocsyncModel
import Foundation
import _CryptoExtras

/// The keys of an encrypted folder (docs/ENCRYPTION.md): a random data key seals the documents;
/// it is stored on the server only wrapped, once by a key derived from the passphrase (scrypt)
/// and once by the recovery key, in a document of its own (``VaultDocument``). A passphrase
/// change wraps the same data key again: a few hundred bytes, no document sent again.
public struct VaultKeys: Sendable {
    /// The key every document's key is derived from (its bytes: swift-crypto's key type is not
    /// `Sendable` on every platform).
    let dataKeyBytes: [UInt8]
    public var dataKey: SymmetricKey { SymmetricKey(data: dataKeyBytes) }

    init(dataKey: SymmetricKey) { dataKeyBytes = dataKey.withUnsafeBytes { Array($0) } }

    /// scrypt's cost: N = 2^17, r = 8 (128 MiB, about half a second on this project's machine).
    public static let defaultCost = ScryptCost(n: 1 << 17, r: 8, p: 1)

    /// A new data key and its vault document, wrapped for `passphrase`; the recovery key, which
    /// unwraps it too, is returned to be shown once.
    public static func create(passphrase: String, cost: ScryptCost = defaultCost) throws -> (keys: VaultKeys, document: VaultDocument, recovery: String) {
        let dataKey = SymmetricKey(size: .bits256)
        let recovery = SymmetricKey(size: .bits256)
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let kek = try cost.derive(passphrase, salt: salt)
        let document = VaultDocument(
            cost: cost, salt: salt, wrappedForPassphrase: try wrap(dataKey, with: kek, purpose: .passphrase),
            wrappedForRecovery: try wrap(dataKey, with: recovery, purpose: .recovery))
        return (VaultKeys(dataKey: dataKey), document, RecoveryKey.text(of: recovery))
    }

    /// The data key of `document`, unwrapped with `passphrase`; a wrong passphrase is
    /// ``VaultError/wrongPassphrase``.
    public static func open(_ document: VaultDocument, passphrase: String) throws -> VaultKeys {
        let kek = try document.cost.derive(passphrase, salt: document.salt)
        guard let key = try? unwrap(document.wrappedForPassphrase, with: kek, purpose: .passphrase) else { throw VaultError.wrongPassphrase }
        return VaultKeys(dataKey: key)
    }

    /// The data key of `document`, unwrapped with the recovery key shown when it was made.
    public static func open(_ document: VaultDocument, recovery text: String) throws -> VaultKeys {
        guard let recovery = RecoveryKey.key(from: text) else { throw VaultError.badRecoveryKey }
        guard let key = try? unwrap(document.wrappedForRecovery, with: recovery, purpose: .recovery) else { throw VaultError.badRecoveryKey }
        return VaultKeys(dataKey: key)
    }

    /// `document` with the data key wrapped for `passphrase` instead (a new salt); the recovery
    /// key's wrapping stays.
    public func rewrapped(_ document: VaultDocument, passphrase: String) throws -> VaultDocument {
        var document = document
        document.salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        document.wrappedForPassphrase = try Self.wrap(dataKey, with: try document.cost.derive(passphrase, salt: document.salt), purpose: .passphrase)
        return document
    }

    enum Purpose: String { case passphrase, recovery }

    static func wrap(_ key: SymmetricKey, with kek: SymmetricKey, purpose: Purpose) throws -> Data {
        let bytes = key.withUnsafeBytes { Data($0) }
        return try AES.GCM.seal(bytes, using: kek, authenticating: Data("docsync-vault-v1 \(purpose.rawValue)".utf8)).combined!
    }

    static func unwrap(_ wrapped: Data, with kek: SymmetricKey, purpose: Purpose) throws -> SymmetricKey {
        let box = try AES.GCM.SealedBox(combined: wrapped)
        return SymmetricKey(data: try AES.GCM.open(box, using: kek, authenticating: Data("docsync-vault-v1 \(purpose.rawValue)".utf8)))
    }
}

/// scrypt's parameters, stored with the wrapped key so that a later cost still opens it.
public struct ScryptCost: Sendable, Hashable {
    public var n: Int
    public var r: Int
    public var p: Int

    public init(n: Int, r: Int, p: Int) {
        self.n = n
        self.r = r
        self.p = p
    }

    /// Whether a server's document names a cost this agent will spend: a hostile server must not
    /// make it derive for hours or allocate gigabytes.
    var isSane: Bool { n >= 1 << 10 && n <= 1 << 20 && n & (n - 1) == 0 && (1...16).contains(r) && (1...4).contains(p) }

    func derive(_ passphrase: String, salt: Data) throws -> SymmetricKey {
        guard isSane else { throw VaultError.badVault("its scrypt cost (N \(n), r \(r), p \(p)) is out of range") }
        return try KDF.Scrypt.deriveKey(
            from: Data(passphrase.utf8), salt: salt, outputByteCount: 32, rounds: n, blockSize: r, parallelism: p, maxMemory: 256 << 20)
    }
}

/// Why the vault cannot be opened or used.
public enum VaultError: Error, Sendable, CustomStringConvertible {
    case wrongPassphrase
    case badRecoveryKey
    case badVault(String)

    public var description: String {
        switch self {
        case .wrongPassphrase: "the passphrase does not open this folder's key (a wrong passphrase, or another folder's server)"
        case .badRecoveryKey: "the recovery key does not open this folder's key (check each group of it)"
        case .badVault(let why): "the server's key document cannot be used: \(why)"
        }
    }
}
