/// Which docTypes a folder syncs (`--types a,b`, `--exclude-types c`): every type, only some, or
/// all but some. The agent pushes and applies only documents of selected types; an endpoint that
/// can filter is asked for those alone.
public struct TypeSelection: Sendable, Hashable {
    /// `nil`: every type (less `except`).
    public var only: Set<String>?
    public var except: Set<String>

    public static let all = TypeSelection(only: nil, except: [])

    /// Most types one selection may name: a server reads the list from the request.
    public static let maxTypes = 1000

    public init(only: Set<String>? = nil, except: Set<String> = []) {
        self.only = only
        self.except = except
    }

    public var isAll: Bool { only == nil && except.isEmpty }

    public func contains(_ docType: String) -> Bool {
        (only?.contains(docType) ?? true) && !except.contains(docType)
    }

    /// The types `self` selects that `old` did not: what a folder must catch up on when its
    /// selection grows (`nil`: nothing new).
    public func added(since old: TypeSelection) -> TypeSelection? {
        if let only {
            let new = only.filter { contains($0) && !old.contains($0) }
            return new.isEmpty ? nil : TypeSelection(only: new)
        }
        if let oldOnly = old.only {
            // Every type but ours excluded and those `old` already had.
            return TypeSelection(except: except.union(oldOnly.filter { old.contains($0) }))
        }
        let new = old.except.subtracting(except)
        return new.isEmpty ? nil : TypeSelection(only: new)
    }

    /// A stable JSON text for the index: `{"only":[…],"except":[…]}` (docTypes may hold commas).
    public var text: String {
        var members: [(key: String, value: JSONValue)] = []
        if let only { members.append((key: "only", value: .array(only.sorted().map { .string($0) }))) }
        members.append((key: "except", value: .array(except.sorted().map { .string($0) })))
        return JSONWriter.string(.object(JSONObject(members)))
    }

    /// Reads ``text`` back (`nil` for anything else).
    public init?(text: String) {
        guard let object = try? JSONParser.parse(text).object else { return nil }
        func strings(_ key: String) -> Set<String>? {
            guard case .array(let list)? = object[key] else { return nil }
            return Set(list.compactMap(\.string))
        }
        self.init(only: strings("only"), except: strings("except") ?? [])
    }
}
