import DocsyncEndpoint
import DocsyncModel

/// Our documents in sync-rails' shape and back: `id` ↔ `uuid`; the docType is the resource and
/// is not sent; `updated_at` is the server's to make; `deleted_at` is `null` on a live object.
enum SyncRailsForm {
    /// The object posted for a document in wire form.
    static func object(_ document: JSONObject) -> JSONObject {
        // Members are taken as they are, not set one by one (a set looks the key up first).
        let own = document.members.filter { !["id", "docType", "uuid", DocumentRules.updatedAtKey, DocumentRules.revKey].contains($0.key) }
        var object = JSONObject([(key: "uuid", value: document["id"] ?? .null)] + own)
        if object[DocumentRules.deletedAtKey] == nil { object[DocumentRules.deletedAtKey] = .null }
        return object
    }

    /// The document in wire form for an object the server sent.
    static func document(_ object: JSONObject, docType: String) -> JSONObject {
        let own = object.members.filter { member in
            !["uuid", "id", "docType"].contains(member.key) && !(member.key == DocumentRules.deletedAtKey && member.value.isNull)
        }
        return JSONObject([(key: "id", value: object["uuid"] ?? .null), (key: "docType", value: .string(docType))] + own)
    }
}
