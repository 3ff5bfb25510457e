/// The names an end-to-end encrypted folder's documents use on the wire (docs/ENCRYPTION.md):
/// known to the agent's engine, the reference endpoint and the vault, which alone seals and opens.
public enum SealedForm {
    /// The member a document's sealed content travels in.
    public static let contentKey = "$enc"
    /// What a sealed document keeps in clear: what revisions, long polls, tombstones and
    /// selective sync need.
    public static let envelope: Set<String> = ["id", "docType", DocumentRules.revKey, DocumentRules.updatedAtKey, DocumentRules.deletedAtKey, DocumentRules.updatedByKey]
    /// Properties that carry a sealed file: a prefix and a name that says nothing of the real one.
    public static let filePropertyPrefix = "$sealed-"
    /// The docType and id of the document holding the folder's wrapped key.
    public static let vaultDocType = "docsync-vault"
    public static let vaultID = "vault"

    /// Whether `document` travels sealed.
    public static func isSealed(_ document: JSONObject) -> Bool { document[contentKey]?.string != nil }

    /// Whether `document` is the vault's key document.
    public static func isVault(_ document: JSONObject) -> Bool { document["docType"]?.string == vaultDocType }

    /// A member of `document` that is neither the envelope, nor the sealed content, nor a sealed
    /// file's property: what a sealed document must not carry (it would be in clear).
    public static func clearMember(of document: JSONObject) -> String? {
        document.members.first { !envelope.contains($0.key) && $0.key != contentKey && !$0.key.hasPrefix(filePropertyPrefix) }?.key
    }
}
