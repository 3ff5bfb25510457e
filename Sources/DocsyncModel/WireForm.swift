/// The wire form of a document: what goes to an endpoint and what an endpoint's document becomes
/// before it is compared with the folder. The file's object without the sync layer's own fields
/// (``DocumentRules/reservedKeys``), with its docType written out.
public enum WireForm {
    /// `object` in wire form; `docType` is filled in when the file left it to its folder.
    public static func body(_ object: JSONObject, docType: String) -> JSONObject {
        var body = object
        for key in DocumentRules.reservedKeys { body[key] = nil }
        if body["docType"] == nil { body["docType"] = .string(docType) }
        return body
    }

    /// Whether ``body(_:docType:)`` leaves `object` as it is: it has its docType and none of the
    /// reserved fields.
    public static func isBody(_ object: JSONObject) -> Bool {
        object["docType"] != nil && !object.members.contains { DocumentRules.isReserved($0.key) }
    }
}
