import DocsyncModel

/// How large a schema is, counted without walking past a limit.
enum SchemaSize {
    /// `limit + 1` when `value` holds more than `limit` values (itself included), else nil.
    static func valuesPast(_ limit: Int, in value: JSONValue) -> Int? {
        var count = 0
        var stack: [JSONValue] = [value]
        while let next = stack.popLast() {
            count += 1
            if count > limit { return count }
            switch next {
            case .object(let object): stack.append(contentsOf: object.members.lazy.map(\.value))
            case .array(let elements): stack.append(contentsOf: elements)
            default: break
            }
        }
        return nil
    }
}
