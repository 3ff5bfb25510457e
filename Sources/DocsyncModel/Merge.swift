/// Three-way merge of JSON documents, per path.
///
/// Changes to different fields merge silently; objects merge key by key, recursively; arrays and
/// scalars change as whole values (an array one side left untouched takes the other side's). When
/// both sides changed the same value differently, `preferLocal` decides and the path is reported.
public enum Merge {
    public struct Result: Sendable, Hashable {
        public var value: JSONValue?
        /// JSON paths both sides changed differently (e.g. `/title`, `/address/city`).
        public var conflicts: [String]
    }

    /// Merges `local` and `remote`, both derived from `base` (`nil` = absent at that path).
    public static func threeWay(base: JSONValue?, local: JSONValue?, remote: JSONValue?, preferLocal: Bool) -> Result {
        var conflicts: [String] = []
        let value = merge(base, local, remote, preferLocal: preferLocal, path: "", conflicts: &conflicts)
        return Result(value: value, conflicts: conflicts)
    }

    private static func merge(
        _ base: JSONValue?, _ local: JSONValue?, _ remote: JSONValue?, preferLocal: Bool, path: String, conflicts: inout [String]
    ) -> JSONValue? {
        if local == remote { return local }
        if local == base { return remote }
        if remote == base { return local }
        if case .object(let localObject)? = local, case .object(let remoteObject)? = remote {
            let (b, l, r) = ((base?.object ?? JSONObject()).keyed, localObject.keyed, remoteObject.keyed)
            var out: [(key: String, value: JSONValue)] = []
            // Local key order first (the file's), then keys only the server has, in its order.
            var keys = localObject.keys
            for key in remoteObject.keys where l[key] == nil { keys.append(key) }
            for key in keys {
                let merged = merge(b[key], l[key], r[key], preferLocal: preferLocal, path: path + "/" + key, conflicts: &conflicts)
                if let merged { out.append((key, merged)) }
            }
            return .object(JSONObject(out))
        }
        conflicts.append(path.isEmpty ? "/" : path)
        return preferLocal ? local : remote
    }

    /// `new`'s content laid out like `existing`: keys `existing` has keep its order (recursively in
    /// nested objects), keys new to it are appended in `new`'s order, keys `new` dropped are gone.
    /// So a file the agent rewrites changes only where the content did: git diffs stay small.
    public static func keepingOrder(of existing: JSONValue, _ new: JSONValue) -> JSONValue {
        guard case .object(let old) = existing, case .object(let fresh) = new else { return new }
        let (oldKeys, freshKeys) = (old.keyed, fresh.keyed)
        var out: [(key: String, value: JSONValue)] = []
        for member in old.members {
            if let value = freshKeys[member.key] { out.append((member.key, keepingOrder(of: member.value, value))) }
        }
        for member in fresh.members where oldKeys[member.key] == nil { out.append(member) }
        return .object(JSONObject(out))
    }
}
