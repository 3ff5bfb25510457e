import DocsyncModel
import Foundation

/// The document on the server that holds an encrypted folder's data key, wrapped (never the key
/// itself): `{"id": "vault", "docType": "docsync-vault", "v": 1, "kdf": {…}, "passphrase": …,
/// "recovery": …}`. Its presence tells the reference endpoint to refuse documents in clear, and
/// an agent without the passphrase to refuse to start.
public struct VaultDocument: Sendable, Hashable {
    public static let docType = SealedForm.vaultDocType
    public static let id = SealedForm.vaultID

    public var cost: ScryptCost
    public var salt: Data
    public var wrappedForPassphrase: Data
    public var wrappedForRecovery: Data

    init(cost: ScryptCost, salt: Data, wrappedForPassphrase: Data, wrappedForRecovery: Data) {
        self.cost = cost
        self.salt = salt
        self.wrappedForPassphrase = wrappedForPassphrase
        self.wrappedForRecovery = wrappedForRecovery
    }

    /// The document as sent (a few hundred bytes).
    public var json: JSONObject {
        let kdf = JSONObject([
            (key: "name", value: "scrypt"), (key: "n", value: .number(String(cost.n))), (key: "r", value: .number(String(cost.r))),
            (key: "p", value: .number(String(cost.p))), (key: "salt", value: .string(salt.base64EncodedString())),
        ])
        return JSONObject([
            (key: "id", value: .string(Self.id)), (key: "docType", value: .string(Self.docType)), (key: "v", value: .number("1")),
            (key: "kdf", value: .object(kdf)), (key: "passphrase", value: .string(wrappedForPassphrase.base64EncodedString())),
            (key: "recovery", value: .string(wrappedForRecovery.base64EncodedString())),
        ])
    }

    /// The document as the server holds it; checked, since the server may be hostile.
    public init(json: JSONObject) throws(VaultError) {
        guard json["v"] == .number("1") else { throw .badVault("version \(json["v"].map { "\($0)" } ?? "none") (this docsync reads 1)") }
        guard let kdf = json["kdf"]?.object, kdf["name"] == .string("scrypt") else { throw .badVault("no scrypt parameters") }
        func number(_ key: String) -> Int? { if case .number(let n)? = kdf[key] { Int(n) } else { nil } }
        func bytes(_ value: JSONValue?) -> Data? { value?.string.flatMap { Data(base64Encoded: $0) } }
        guard let n = number("n"), let r = number("r"), let p = number("p"), let salt = bytes(kdf["salt"]), salt.count >= 16,
              let passphrase = bytes(json["passphrase"]), let recovery = bytes(json["recovery"]), passphrase.count == 60, recovery.count == 60
        else { throw .badVault("a field is missing or malformed") }
        cost = ScryptCost(n: n, r: r, p: p)
        guard cost.isSane else { throw .badVault("its scrypt cost (N \(n), r \(r), p \(p)) is out of range") }
        self.salt = salt
        wrappedForPassphrase = passphrase
        wrappedForRecovery = recovery
    }
}
