import DocsyncModel

/// The keywords about objects: required, counts, properties and their names.
extension SchemaEvaluator {
    mutating func checkObject(_ node: SchemaNode, _ object: JSONObject, annotate: Bool, into local: inout Annotations) -> Bool {
        var valid = true
        for name in node.required where object[name] == nil {
            fail("required", "the required property \(Quote.text(name)) is missing")
            valid = false
        }
        valid = checkCount(object.count, of: "properties", min: node.minProperties, max: node.maxProperties) && valid
        for (key, names) in node.dependentRequired where object[key] != nil {
            for name in names where object[name] == nil {
                fail("dependentRequired", "has \(Quote.text(key)), so \(Quote.text(name)) is required")
                valid = false
            }
        }
        if !valid && quiet > 0 { return false }
        valid = checkMembers(node, object, annotate: annotate, into: &local) && valid
        if let names = node.propertyNames {
            for key in object.keys where !probeName(names, key) {
                location.append(.key(key))
                fail("propertyNames", "the property name \(Quote.text(key)) is not allowed")
                location.removeLast()
                valid = false
                if quiet > 0 { return false }
            }
        }
        return valid
    }

    private mutating func probeName(_ node: Int, _ key: String) -> Bool {
        var ignored = Annotations()
        return probe(node, .string(key), annotate: false, into: &ignored)
    }

    private mutating func checkMembers(_ node: SchemaNode, _ object: JSONObject, annotate: Bool, into local: inout Annotations) -> Bool {
        guard !node.properties.isEmpty || !node.patternProperties.isEmpty || node.additionalProperties != nil else { return true }
        var valid = true
        for member in object.members {
            var matched = false
            if let child = node.properties[member.key] {
                matched = true
                valid = evaluate(child, member.value, at: .key(member.key)) && valid
            }
            for (pattern, child) in node.patternProperties where matches(pattern, member.key) {
                matched = true
                valid = evaluate(child, member.value, at: .key(member.key)) && valid
            }
            if matched {
                if annotate { local.properties.insert(member.key) }
            } else if let additional = node.additionalProperties {
                valid = checkLeftOver(additional, member, keyword: "additionalProperties") && valid
            }
            if (!valid && quiet > 0) || overBudget { return false }
        }
        if node.additionalProperties != nil { local.allProperties = true }
        return valid
    }

    /// A property no `properties` or `patternProperties` took, against `additionalProperties` or
    /// `unevaluatedProperties`; `false` there gets a message that names the property.
    private mutating func checkLeftOver(_ child: Int, _ member: (key: String, value: JSONValue), keyword: String) -> Bool {
        if nodes[child].form == .never {
            location.append(.key(member.key))
            fail(keyword, "the property \(Quote.text(member.key)) is not allowed here")
            location.removeLast()
            return false
        }
        return evaluate(child, member.value, at: .key(member.key))
    }

    mutating func checkUnevaluatedProperties(_ node: SchemaNode, _ object: JSONObject, local: inout Annotations) -> Bool {
        guard let unevaluated = node.unevaluatedProperties, !local.allProperties else { return true }
        var valid = true
        for member in object.members where !local.properties.contains(member.key) {
            valid = checkLeftOver(unevaluated, member, keyword: "unevaluatedProperties") && valid
            if !valid && quiet > 0 { return false }
        }
        local.allProperties = true
        return valid
    }
}
