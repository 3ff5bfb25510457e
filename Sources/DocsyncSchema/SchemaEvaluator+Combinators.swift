import DocsyncModel

/// The in-place applicators: allOf, anyOf, oneOf, not, if/then/else, dependentSchemas.
extension SchemaEvaluator {
    func checkCombinators(_ node: SchemaNode, _ instance: JSONValue, annotate: Bool, into local: inout Annotations) -> Bool {
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
                fail("anyOf", "matches none of the \(node.anyOf.count) alternatives under anyOf")
                valid = false
            }
        }
        if !node.oneOf.isEmpty {
            var branch = Annotations()
            let passed = node.oneOf.filter { probe($0, instance, annotate: annotate, into: &branch) }.count
            if passed == 1 {
                local.merge(branch)
            } else {
                fail("oneOf", passed == 0 ? "matches none of the \(node.oneOf.count) alternatives under oneOf"
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

    private func checkConditional(_ node: SchemaNode, _ instance: JSONValue, annotate: Bool, into local: inout Annotations) -> Bool {
        guard let condition = node.ifSchema else { return true }
        if probe(condition, instance, annotate: annotate, into: &local) {
            guard let then = node.thenSchema else { return true }
            return evaluate(then, instance, annotate: annotate, into: &local)
        }
        guard let otherwise = node.elseSchema else { return true }
        return evaluate(otherwise, instance, annotate: annotate, into: &local)
    }
}
