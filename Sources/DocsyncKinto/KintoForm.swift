import DocsyncModel

/// Our documents as Kinto records and back: the docType is the collection, the revision is the
/// record's `last_modified`, a tombstone is `deleted: true`. `last_modified` is Kinto's to set: a
/// member of that name is never sent inside the data.
enum KintoForm {
    /// Collection and record ids: `^[a-zA-Z0-9][a-zA-Z0-9_-]*$`.
    static func isKintoID(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic || ("0"..."9").contains(first) else { return false }
        return s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }
    }

    /// The record's data for a document in wire form.
    static func data(_ document: JSONObject) -> JSONObject {
        // Members are taken as they are, not set one by one: a set looks the key up first, and a
        // record may have hundreds of thousands of them.
        JSONObject(document.members.filter { !["id", "docType", "last_modified", DocumentRules.revKey, DocumentRules.deletedAtKey].contains($0.key) })
    }

    /// The document in wire form for a record of `collection`.
    static func document(_ record: JSONObject, collection: String) -> JSONObject {
        // `updated_by` only from the history plugin (see `writers`): a record's own member of that
        // name is anyone's to write, and would name the author of a git commit.
        let own = record.members.filter { !["id", "docType", "last_modified", "deleted", DocumentRules.updatedByKey].contains($0.key) }
        var document = JSONObject([(key: "id", value: record["id"] ?? .null), (key: "docType", value: .string(collection))] + own)
        let modified = revision(record)
        if let modified { document[DocumentRules.revKey] = .number(String(modified)) }
        if record["deleted"] == true {
            document[DocumentRules.deletedAtKey] = .string(Timestamp(unixMilliseconds: modified ?? 0).rfc3339)
        }
        return document
    }

    /// One version of a record: its id and `last_modified`.
    struct Version: Hashable {
        var id: String
        var modified: Int64
    }

    /// A record's `last_modified` (milliseconds), when it is a sane one.
    static func revision(_ record: JSONObject) -> Int64? {
        guard case .number(let text)? = record["last_modified"], let value = Int64(text), value > 0 else { return nil }
        return value
    }
}
