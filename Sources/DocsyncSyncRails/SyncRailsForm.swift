import DocsyncEndpoint
import DocsyncModel

/// Our documents in sync-rails' shape and back: `id` ↔ `uuid`; the docType is the resource and
/// is not sent; `updated_at` is the server's to make; `deleted_at` is `null` on a live object.
enum SyncRailsForm {
    /// The object posted for a document in wire form.
    static func object(_ document: JSONObject) -> JSONObject {
        var object = JSONObject()
        object["uuid"] = document["id"] ?? .null
        for (key, value) in document.members where !["id", "docType", DocumentRules.updatedAtKey, DocumentRules.revKey].contains(key) {
            object[key] = value
        }
        if object[DocumentRules.deletedAtKey] == nil { object[DocumentRules.deletedAtKey] = .null }
        return object
    }

    /// The document in wire form for an object the server sent.
    static func document(_ object: JSONObject, docType: String) -> JSONObject {
        var document = JSONObject()
        document["id"] = object["uuid"] ?? .null
        document["docType"] = .string(docType)
        for (key, value) in object.members where key != "uuid" && key != "id" && key != "docType" {
            if key == DocumentRules.deletedAtKey && value.isNull { continue }
            document[key] = value
        }
        return document
    }
}
