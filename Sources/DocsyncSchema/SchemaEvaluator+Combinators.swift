import DocsyncModel

/// The in-place applicators: allOf, anyOf, oneOf, not, if/then/else, dependentSchemas.
extension SchemaEvaluator {
    mutating func checkCombinators(_ node: SchemaNode, _ instance: JSONValue, annotate: Bool, into local: inout Annotations) -> Bool {
        var valid = true
        for child in node.allOf {
            valid = evaluate(child, instance, annotate: annotate, into: &local) && valid
            if !valid && quiet > 0 { return false }
        }
        if !node.anyOf.isEmpty {
            var passed = 0
            for child in node.anyOf where probe(child, instance, annotate: annotate, into: &local) {
                passed += 1
                if !annotate { break }
            }
            if passed == 0 {
                let why = reasons(node.anyOf, instance)
                fail("anyOf", "matches none of the alternatives under anyOf: " + why)
                valid = false
            }
        }
        if !node.oneOf.isEmpty {
            var branch = Annotations()
            var passed = 0
            for child in node.oneOf where probe(child, instance, annotate: annotate, into: &branch) { passed += 1 }
            if passed == 1 {
                local.merge(branch)
            } else {
                let why = passed == 0 ? reasons(node.oneOf, instance) : ""
                fail("oneOf", passed == 0 ? "matches none of the alternatives under oneOf: " + why
                                          : "matches \(passed) of the alternatives under oneOf, and exactly one is allowed")
                valid = false
            }
        }
        if let not = node.not {
            var ignored = Annotations()
            if probe(not, instance, annotate: false, into: &ignored) {
                fail("not", "matches the schema under not, which it must not")
                valid = false
            }
        }
        valid = checkConditional(node, instance, annotate: annotate, into: &local) && valid
        if case .object(let object) = instance {
            for (key, child) in node.dependentSchemas where object[key] != nil {
                valid = evaluate(child, instance, annotate: annotate, into: &local) && valid
            }
        }
        return valid
    }

    private mutating func checkConditional(_ node: SchemaNode, _ instance: JSONValue, annotate: Bool, into local: inout Annotations) -> Bool {
        guard let condition = node.ifSchema else { return true }
        if probe(condition, instance, annotate: annotate, into: &local) {
            guard let then = node.thenSchema else { return true }
            return evaluate(then, instance, annotate: annotate, into: &local)
        }
        guard let otherwise = node.elseSchema else { return true }
        return evaluate(otherwise, instance, annotate: annotate, into: &local)
    }

    /// Why each alternative failed, first reason of each, for a message that says what would pass.
    /// Only asked when the message will be recorded.
    private mutating func reasons(_ alternatives: [Int], _ instance: JSONValue) -> String {
        guard quiet == 0 else { return "" }
        let here = pointer
        var found: [String] = []
        for child in alternatives.prefix(4) {
            let saved = violations.count
            var ignored = Annotations()
            _ = evaluate(child, instance, annotate: false, into: &ignored)
            if let first = violations[saved...].first { found.append(first.instance == here ? first.message : first.description) }
            violations.removeSubrange(saved...)
        }
        return found.joined(separator: "; or ") + (alternatives.count > 4 ? "; or …" : "")
    }
}
