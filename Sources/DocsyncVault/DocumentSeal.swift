import Crypto
import DocsyncModel
import Foundation

/// A document's content sealed for the server: every field but the envelope the sync needs in
/// clear (``envelope``) goes into `"$enc"`, ChaCha20-Poly1305 under a key derived for that
/// document (HKDF-SHA256 of the data key, the docType and the id), with the docType and id as
/// associated data, and a version number inside: a ciphertext moved to another document or
/// docType, a byte flipped, or an older version replayed is refused when opened.
public struct DocumentSeal: Sendable {
    static let key = SealedForm.contentKey
    static let envelope = SealedForm.envelope
    static let prefix = "1."

    let keys: VaultKeys
    /// HKDF's extract step of the data key (no salt), made once, and an HMAC keyed with it: each
    /// document's key is one expand of it (HKDF's first block, `HMAC(prk, info ‖ 0x01)`, a copy
    /// of this HMAC fed the info), the same key `HKDF.deriveKey(inputKeyMaterial:info:)` makes.
    /// Keying the HMAC and the allocations of `HKDF.expand` were half of sealing's CPU.
    let keyedMAC: KeyedMAC
    /// What stays in clear beside the envelope: members the endpoint's server writes itself
    /// (``EndpointCapabilities/serverMembers``). Never trusted: the engine reads them only to
    /// find a file, whose content the seal checks.
    let clear: Set<String>

    public init(_ keys: VaultKeys, serverMembers: Set<String> = []) {
        self.keys = keys
        let pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: keys.dataKey, salt: [UInt8]())
        self.keyedMAC = KeyedMAC(mac: HMAC<SHA256>(key: SymmetricKey(data: pseudoRandomKey)))
        self.clear = Self.envelope.union(serverMembers)
    }

    /// `document` (wire form) with its content sealed as version `number`.
    public func seal(_ document: JSONObject, id: String, docType: String, number: Int64) throws -> JSONObject {
        var clear: [(key: String, value: JSONValue)] = []
        var content: [(key: String, value: JSONValue)] = []
        for member in document.members {
            if self.clear.contains(member.key) { clear.append(member) } else { content.append(member) }
        }
        let inner = JSONValue.object(JSONObject([(key: "n", value: .number(String(number))), (key: "c", value: .object(JSONObject(content)))]))
        let bound = Self.associatedData(id: id, docType: docType)
        let box = try ChaChaPoly.seal(JSONWriter.bytes(inner), using: documentKey(bound), authenticating: bound)
        clear.append((key: Self.key, value: .string(Self.prefix + box.combined.base64EncodedString())))
        return JSONObject(clear)
    }

    /// `document` with its content opened back into it, and the version number it carried.
    public func open(_ document: JSONObject) throws(SealError) -> (document: JSONObject, number: Int64) {
        guard let id = document["id"]?.string, let docType = document["docType"]?.string else { throw SealError("no id or docType beside it") }
        guard case .string(let text)? = document[Self.key], text.hasPrefix(Self.prefix),
              let combined = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))), combined.count >= 28
        else { throw SealError("its sealed content is not in a form this docsync reads") }
        let plain: Data
        let bound = Self.associatedData(id: id, docType: docType)
        do {
            plain = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: combined), using: documentKey(bound), authenticating: bound)
        } catch {
            throw SealError("it does not open with this folder's key (changed, truncated, moved from another document, or sealed with another key)")
        }
        guard case .object(let inner)? = try? JSONParser.parse(Array(plain)), case .number(let n)? = inner["n"], let number = Int64(n),
              case .object(let content)? = inner["c"]
        else { throw SealError("its sealed content is not a document") }
        // Only the envelope is taken from what is in clear: anything else beside the seal was not
        // sealed by a holder of the key (a property the server set, a member it added).
        var opened = document.members.filter { clear.contains($0.key) }
        opened += content.members.filter { !clear.contains($0.key) }
        return (JSONObject(opened), number)
    }

    /// The key of the document whose associated data (HKDF's info) is `bound`.
    func documentKey(_ bound: Data) -> SymmetricKey {
        var mac = keyedMAC.mac
        mac.update(data: bound)
        mac.update(data: Self.firstBlock)
        return SymmetricKey(data: mac.finalize())
    }

    /// HKDF's counter byte of its first output block.
    static let firstBlock = Data([1])

    /// An HMAC keyed once and only ever copied: its hashers copy their state before they are
    /// written (copy on write, as swift-crypto's digests do), so copies made on many threads at
    /// once never write into this one. (`HMAC` is generic over its hash, so not `Sendable`.)
    struct KeyedMAC: @unchecked Sendable {
        let mac: HMAC<SHA256>
    }

    static func associatedData(id: String, docType: String) -> Data { Data("docsync-doc-v1\u{0}\(docType)\u{0}\(id)".utf8) }
}

/// Why a sealed document could not be opened.
public struct SealError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
