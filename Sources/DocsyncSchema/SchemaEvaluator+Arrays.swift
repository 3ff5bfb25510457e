import DocsyncModel

/// The keywords about arrays: counts, uniqueness, items, contains.
extension SchemaEvaluator {
    mutating func checkArray(_ node: SchemaNode, _ elements: [JSONValue], annotate: Bool, into local: inout Annotations) -> Bool {
        var valid = checkCount(elements.count, of: "items", min: node.minItems, max: node.maxItems)
        if node.uniqueItems, let (first, second) = Self.firstRepeat(elements) {
            fail("uniqueItems", "items \(first) and \(second) are equal, and items must be unique")
            valid = false
        }
        if !valid && quiet > 0 { return false }
        for (i, child) in node.prefixItems.enumerated() where i < elements.count {
            valid = evaluate(child, elements[i], at: .index(i)) && valid
            if !valid && quiet > 0 { return false }
        }
        local.itemPrefix = max(local.itemPrefix, min(node.prefixItems.count, elements.count))
        if let items = node.items {
            for i in node.prefixItems.count..<max(elements.count, node.prefixItems.count) {
                valid = evaluate(items, elements[i], at: .index(i)) && valid
                if !valid && quiet > 0 { return false }
            }
            local.allItems = true
        }
        if let contains = node.contains {
            valid = checkContains(node, contains, elements, annotate: annotate, into: &local) && valid
        }
        return valid
    }

    /// `minItems`/`maxItems`, `minProperties`/`maxProperties`: `count` things of `noun` against
    /// the bounds (keywords named after the noun, `items` or `properties`).
    mutating func checkCount(_ count: Int, of noun: String, min: Int?, max: Int?) -> Bool {
        let keyword = noun.prefix(1).uppercased() + noun.dropFirst()
        var valid = true
        if let min, count < min {
            fail("min" + keyword, "has \(count) \(noun), fewer than the minimum \(min)")
            valid = false
        }
        if let max, count > max {
            fail("max" + keyword, "has \(count) \(noun), more than the maximum \(max)")
            valid = false
        }
        return valid
    }

    /// The first two equal items, by index; hashing keeps a long array linear.
    private static func firstRepeat(_ elements: [JSONValue]) -> (Int, Int)? {
        var seen: [SchemaKey: Int] = [:]
        for (i, element) in elements.enumerated() {
            if let earlier = seen.updateValue(i, forKey: SchemaKey(element)) { return (earlier, i) }
        }
        return nil
    }

    private mutating func checkContains(_ node: SchemaNode, _ contains: Int, _ elements: [JSONValue], annotate: Bool, into local: inout Annotations) -> Bool {
        var matches = 0
        for (i, element) in elements.enumerated() {
            var ignored = Annotations()
            if probe(contains, element, annotate: false, into: &ignored) {
                matches += 1
                if annotate { local.items.insert(i) }
            }
        }
        let minimum = node.minContains ?? 1
        if matches < minimum {
            fail(node.minContains == nil ? "contains" : "minContains",
                 matches == 0 ? "no item matches the schema under contains" : "\(matches) items match contains, fewer than \(minimum)")
            return false
        }
        if let maximum = node.maxContains, matches > maximum {
            fail("maxContains", "\(matches) items match contains, more than \(maximum)")
            return false
        }
        return true
    }

    mutating func checkUnevaluatedItems(_ node: SchemaNode, _ elements: [JSONValue], local: inout Annotations) -> Bool {
        guard let unevaluated = node.unevaluatedItems, !local.allItems else { return true }
        var valid = true
        for i in local.itemPrefix..<max(elements.count, local.itemPrefix) where !local.items.contains(i) {
            if nodes[unevaluated].form == .never {
                location.append(.index(i))
                fail("unevaluatedItems", "item \(i) is not allowed here")
                location.removeLast()
                valid = false
            } else {
                valid = evaluate(unevaluated, elements[i], at: .index(i)) && valid
            }
            if !valid && quiet > 0 { return false }
        }
        local.allItems = true
        return valid
    }
}
