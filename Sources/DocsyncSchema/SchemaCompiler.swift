import DocsyncModel

/// A schema handed to the compiler: the URI it is known by and its JSON.
public struct SchemaDocument: Sendable {
    public var uri: String
    public var value: JSONValue

    public init(uri: String, value: JSONValue) {
        self.uri = uri
        self.value = value
    }
}

/// A schema resource: a document, or a subschema with an `$id` of its own.
struct SchemaResource: Sendable {
    var uri: String
    var document: Int
    var path: String
    var anchors: [String: Int] = [:]
    var dynamicAnchors: [String: Int] = [:]
}

/// Turns schema documents into `CompiledSchemas` in two passes. The scan gives every subschema a
/// node number and records resources and anchors; the compile reads each node's keywords, so a
/// `$ref` is a lookup of a number already given, never a recursion into its target. That keeps
/// cyclic and deeply chained references finite.
final class SchemaCompiler {
    struct Source {
        var value: JSONValue
        var base: SchemaURI
        var document: Int
        var path: String
    }

    /// Subschemas over all documents; past this the schemas are refused as too large.
    static let maxNodes = 200_000
    /// Bytes of patterns over all documents; past this the schemas are refused as too large
    /// (each is compiled by PCRE2, whose time grows with the length).
    static let maxPatternBytes = 256 << 10

    let documents: [SchemaDocument]
    let assertFormats: Bool
    var nodes: [SchemaNode] = []
    var sources: [Source] = []
    var resources: [SchemaResource] = []
    var resourceByURI: [String: Int] = [:]
    var nodeByPath: [String: Int] = [:]
    var vocabularies: [Int: Set<String>?] = [:]
    var patternBytes = 0

    init(documents: [SchemaDocument], assertFormats: Bool) {
        self.documents = documents
        self.assertFormats = assertFormats
    }

    /// A pattern of the schemas, compiled, its bytes counted against ``maxPatternBytes``.
    func pattern(_ source: String) throws(SchemaProblem.Reason) -> SchemaPattern {
        patternBytes += source.utf8.count
        guard patternBytes <= Self.maxPatternBytes else {
            throw .tooLarge("more than \(Self.maxPatternBytes) bytes of patterns")
        }
        return try SchemaPattern(source)
    }

    func compile() throws(SchemaProblem) -> CompiledSchemas {
        var roots: [String: Int] = [:]
        for (index, document) in documents.enumerated() {
            let uri = SchemaURI(document.uri)
            let resource = addResource(uri.withoutFragment, document: index, path: "")
            roots[document.uri] = try scan(document.value, document: index, path: "", base: uri, resource: resource)
        }
        var next = 0
        while next < nodes.count {
            try compileNode(next)
            next += 1
        }
        return CompiledSchemas(nodes: nodes, resources: resources, roots: roots)
    }

    private func addResource(_ uri: String, document: Int, path: String) -> Int {
        resources.append(SchemaResource(uri: uri, document: document, path: path))
        resourceByURI[uri] = resources.count - 1
        return resources.count - 1
    }

    static func pathKey(_ document: Int, _ path: String) -> String { "\(document):\(path)" }

    // MARK: The scan

    private static let singleSchemaKeywords: Set<String> = [
        "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    ]
    private static let schemaMapKeywords: Set<String> = ["properties", "patternProperties", "$defs", "dependentSchemas"]
    private static let schemaArrayKeywords: Set<String> = ["allOf", "anyOf", "oneOf", "prefixItems"]

    /// Numbers the subschema at `path` and everything under it that the draft calls a subschema.
    @discardableResult
    func scan(_ value: JSONValue, document: Int, path: String, base: SchemaURI, resource: Int) throws(SchemaProblem) -> Int {
        if let known = nodeByPath[Self.pathKey(document, path)] { return known }
        guard nodes.count < Self.maxNodes else {
            throw SchemaProblem(
                location: resources[resource].uri, reason: .tooLarge("more than \(Self.maxNodes) subschemas"),
                document: document - CompiledSchemas.metaDocuments.count)
        }
        var base = base, resource = resource
        if case .object(let object) = value, case .string(let id)? = object["$id"] {
            let resolved = base.resolving(id)
            base = resolved
            base.fragment = nil
            if path == resources[resource].path && document == resources[resource].document {
                resourceByURI[base.text] = resource
            } else {
                resource = addResource(base.text, document: document, path: path)
            }
        }
        let index = nodes.count
        nodes.append(SchemaNode(resource: resource, location: resources[resource].uri + "#" + path))
        sources.append(Source(value: value, base: base, document: document, path: path))
        nodeByPath[Self.pathKey(document, path)] = index
        guard case .object(let object) = value else { return index }
        if case .string(let name)? = object["$anchor"] { resources[resource].anchors[name] = index }
        if case .string(let name)? = object["$dynamicAnchor"] {
            resources[resource].anchors[name] = index
            resources[resource].dynamicAnchors[name] = index
        }
        for (key, child) in object.members {
            let childPath = path + "/" + key.pointerEscaped
            if Self.singleSchemaKeywords.contains(key) {
                try scan(child, document: document, path: childPath, base: base, resource: resource)
            } else if Self.schemaMapKeywords.contains(key), case .object(let map) = child {
                for member in map.members {
                    try scan(member.value, document: document, path: childPath + "/" + member.key.pointerEscaped, base: base, resource: resource)
                }
            } else if Self.schemaArrayKeywords.contains(key), case .array(let elements) = child {
                for (i, element) in elements.enumerated() {
                    try scan(element, document: document, path: childPath + "/\(i)", base: base, resource: resource)
                }
            }
        }
        return index
    }

    // MARK: References

    /// The node a `$ref` (or `$dynamicRef`, `$schema`) names, resolved against `base`.
    func resolve(_ reference: String, from base: SchemaURI) throws(SchemaProblem.Reason) -> Int {
        let uri = base.resolving(reference)
        let fragment = uri.fragment ?? ""
        guard let resource = resourceByURI[uri.withoutFragment] else { throw .unresolvable(uri.text) }
        let entry = resources[resource]
        if !fragment.isEmpty && !fragment.hasPrefix("/") {
            guard let node = entry.anchors[fragment] else { throw .unresolvable(uri.text) }
            return node
        }
        guard let tokens = SchemaURI.pointerTokens(fragment) else { throw .unresolvable(uri.text) }
        let path = entry.path + tokens.map { "/" + $0.pointerEscaped }.joined()
        if let known = nodeByPath[Self.pathKey(entry.document, path)] { return known }
        // A pointer into something the scan did not number (an unknown keyword, `examples`): the
        // value there is compiled as a subschema of the resource it is in.
        guard let value = Self.value(at: tokens, in: value(ofResource: entry)) else { throw .unresolvable(uri.text) }
        do throws(SchemaProblem) {
            return try scan(value, document: entry.document, path: path, base: SchemaURI(entry.uri), resource: resource)
        } catch {
            throw error.reason
        }
    }

    private func value(ofResource entry: SchemaResource) -> JSONValue {
        Self.value(at: SchemaURI.pathTokens(entry.path), in: documents[entry.document].value) ?? .null
    }

    static func value(at tokens: [String], in root: JSONValue) -> JSONValue? {
        var current = root
        for token in tokens {
            switch current {
            case .object(let object):
                guard let next = object[token] else { return nil }
                current = next
            case .array(let elements):
                guard let i = Int(token), i >= 0, i < elements.count, String(i) == token else { return nil }
                current = elements[i]
            default:
                return nil
            }
        }
        return current
    }

    /// The vocabularies a resource's `$schema` declares, or nil for the draft's own (all of them).
    func vocabulary(of resource: Int) -> Set<String>? {
        if let known = vocabularies[resource] { return known }
        var result: Set<String>?
        let entry = resources[resource]
        if case .object(let root) = value(ofResource: entry), case .string(let meta)? = root["$schema"],
           meta != CompiledSchemas.draft202012,
           let metaResource = resourceByURI[SchemaURI(meta).withoutFragment],
           case .object(let metaRoot) = value(ofResource: resources[metaResource]),
           case .object(let declared)? = metaRoot["$vocabulary"] {
            result = Set(declared.keys)
        }
        vocabularies[resource] = .some(result)
        return result
    }
}
