import DocsyncModel

/// What the subschemas applied in place to one instance evaluated: the properties and items that
/// `unevaluatedProperties` and `unevaluatedItems` then leave alone.
struct Annotations {
    var allProperties = false
    var properties: Set<String> = []
    var allItems = false
    var itemPrefix = 0
    var items: Set<Int> = []

    mutating func merge(_ other: Annotations) {
        allProperties = allProperties || other.allProperties
        if !allProperties { properties.formUnion(other.properties) }
        allItems = allItems || other.allItems
        itemPrefix = max(itemPrefix, other.itemPrefix)
        if !allItems { items.formUnion(other.items) }
    }
}

/// One check of one instance: walks the compiled nodes, keeps the dynamic scope and the instance
/// location, and collects violations. Used once and dropped; `CompiledSchemas` is what is shared.
struct SchemaEvaluator {
    enum Step { case key(String), index(Int) }

    /// Nested evaluations past this are refused with a violation: a schema that refers to itself
    /// without consuming the instance (`{"$ref": "#"}`) would otherwise never end.
    static let maxDepth = 2000

    let nodes: [SchemaNode]
    let resources: [SchemaResource]
    let maxViolations: Int
    var scope: [Int] = []
    var location: [Step] = []
    var violations: [SchemaViolation] = []
    /// Above zero while evaluating a subschema whose failure is not the document's (inside `anyOf`,
    /// `not`, `if`, `contains`): nothing is recorded, and the first failure ends that subschema.
    var quiet = 0
    var depth = 0
    var tooDeep = false
    /// What the check may still do (``CheckBudget``); once spent, every evaluation fails at once.
    var budget: CheckBudget
    var overBudget = false
    let scratch = MatchScratch()

    init(_ schemas: CompiledSchemas, maxViolations: Int, budget: CheckBudget) {
        nodes = schemas.nodes
        resources = schemas.resources
        self.maxViolations = maxViolations
        self.budget = budget
    }

    /// The violation a check that ran out of budget ends with: the only one it reports, since
    /// what it found before may be a part of the story.
    static let overBudgetViolation = SchemaViolation(
        instance: "", keyword: SchemaViolation.overBudgetKeyword,
        message: "checking this document against its schema took more work than a check may do (\(CheckBudget.perDocument) steps); "
            + "simplify the schema's patterns (nested or alternated repetition backtracks) or split the document")

    /// Marks the check as out of budget; false, for the caller to return.
    mutating func spend() -> Bool {
        overBudget = true
        return false
    }

    /// Whether `pattern` matches `text`, paid from the budget; false once it is spent.
    mutating func matches(_ pattern: SchemaPattern, _ text: String) -> Bool {
        guard !overBudget else { return false }
        switch pattern.match(text, scratch: scratch, budget: &budget) {
        case .matched: return true
        case .unmatched: return false
        case .overBudget: return spend()
        }
    }

    var pointer: String {
        location.map { step in
            switch step {
            case .key(let k): "/" + k.pointerEscaped
            case .index(let i): "/\(i)"
            }
        }.joined()
    }

    mutating func fail(_ keyword: String, _ message: @autoclosure () -> String) {
        guard quiet == 0, violations.count < maxViolations else { return }
        violations.append(SchemaViolation(instance: pointer, keyword: keyword, message: message()))
    }

    /// `node` applied to `instance`; its annotations are merged into `annotations` when it passes
    /// and `annotate` is set.
    mutating func evaluate(_ index: Int, _ instance: JSONValue, annotate: Bool, into annotations: inout Annotations) -> Bool {
        let node = nodes[index]
        switch node.form {
        case .always: return true
        case .never:
            fail("false", "no value is allowed here")
            return false
        case .keywords: break
        }
        budget.charge(CheckBudget.perEvaluation)
        guard !overBudget, !budget.isSpent else { return spend() }
        guard depth < Self.maxDepth else {
            tooDeep = true
            fail("$ref", "the schema refers to itself more than \(Self.maxDepth) levels deep here")
            return false
        }
        depth += 1
        let entered = scope.last != node.resource
        if entered { scope.append(node.resource) }
        defer {
            depth -= 1
            if entered { scope.removeLast() }
        }
        var local = Annotations()
        let wantAnnotations = annotate || node.needsAnnotations
        let valid = evaluateKeywords(node, instance, annotate: wantAnnotations, into: &local)
        if valid && annotate { annotations.merge(local) }
        return valid
    }

    private mutating func evaluateKeywords(_ node: SchemaNode, _ instance: JSONValue, annotate: Bool, into local: inout Annotations) -> Bool {
        var valid = true
        if let ref = node.ref {
            valid = evaluate(ref, instance, annotate: annotate, into: &local) && valid
            if !valid && quiet > 0 { return false }
        }
        if let dynamic = node.dynamicRef {
            valid = evaluate(dynamicTarget(dynamic), instance, annotate: annotate, into: &local) && valid
            if !valid && quiet > 0 { return false }
        }
        valid = checkValue(node, instance) && valid
        if !valid && quiet > 0 { return false }
        switch instance {
        case .object(let object): valid = checkObject(node, object, annotate: annotate, into: &local) && valid
        case .array(let elements): valid = checkArray(node, elements, annotate: annotate, into: &local) && valid
        default: break
        }
        if !valid && quiet > 0 { return false }
        valid = checkCombinators(node, instance, annotate: annotate, into: &local) && valid
        if !valid && quiet > 0 { return false }
        switch instance {
        case .object(let object): valid = checkUnevaluatedProperties(node, object, local: &local) && valid
        case .array(let elements): valid = checkUnevaluatedItems(node, elements, local: &local) && valid
        default: break
        }
        return valid
    }

    private func dynamicTarget(_ reference: DynamicReference) -> Int {
        guard let anchor = reference.anchor else { return reference.target }
        for resource in scope {
            if let node = resources[resource].dynamicAnchors[anchor] { return node }
        }
        return reference.target
    }

    /// Evaluates a child instance (a property's value, an item) with its location pushed.
    mutating func evaluate(_ index: Int, _ instance: JSONValue, at step: Step) -> Bool {
        location.append(step)
        defer { location.removeLast() }
        var ignored = Annotations()
        return evaluate(index, instance, annotate: false, into: &ignored)
    }

    /// Evaluates without recording, for applicators whose subschemas may fail without the
    /// instance failing.
    mutating func probe(_ index: Int, _ instance: JSONValue, annotate: Bool, into annotations: inout Annotations) -> Bool {
        quiet += 1
        defer { quiet -= 1 }
        return evaluate(index, instance, annotate: annotate, into: &annotations)
    }
}
