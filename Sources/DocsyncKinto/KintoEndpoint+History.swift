import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel

extension KintoEndpoint {
    /// Who wrote each version of a page of records, where the history plugin is on
    /// (`kinto.plugins.history`): its entries name the `user_id` of every write, with the record
    /// as written. Handed on as the change's `updated_by` (git commits take it as the author);
    /// without the plugin, or for a version the history does not show, there is no author.
    /// The user id is Kinto's own (`account:alice`, or `basicauth:` and a digest): `--authors`
    /// maps it to a name.
    func writers(in collection: String, since: Int64?, page records: [JSONValue]) async throws(EndpointError) -> [KintoForm.Version: String] {
        guard hasHistory(), !records.isEmpty else { return [:] }
        // History entries are stamped as or after the write they record: those after `since`
        // cover every record of the page.
        var path = "\(bucketPath)/history?resource_name=record&collection_id=\(collection)&_sort=last_modified&_limit=\(Self.historyLimit)"
        if let since { path += "&_since=\(since)" }
        let reply = try await call(.GET, path)
        guard reply.ok, case .array(let entries)? = reply.json.object?["data"] else { return [:] }
        var writers: [KintoForm.Version: String] = [:]
        for case .object(let entry) in entries {
            guard let id = entry["record_id"]?.string, let user = entry["user_id"]?.string,
                  let data = entry["target"]?.object?["data"]?.object, let modified = KintoForm.revision(data)
            else { continue }
            writers[KintoForm.Version(id: id, modified: modified)] = String(user.prefix(200))
        }
        return writers
    }

    /// History entries read per page of records (several writes of one record each have one).
    static let historyLimit = 10_000
}
