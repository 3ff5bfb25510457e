import DocsyncModel

/// The keywords about one value: type, enum, const, numbers, strings and formats.
extension SchemaEvaluator {
    mutating func checkValue(_ node: SchemaNode, _ instance: JSONValue) -> Bool {
        var valid = true
        if let types = node.types, !types.admits(instance) {
            fail("type", "expected \(types.description), got \(Quote.value(instance))")
            valid = false
        }
        if let values = node.enumValues, !values.contains(where: { SchemaEquality.equal($0, instance) }) {
            fail("enum", "\(Quote.json(instance)) is not one of \(Self.list(values))")
            valid = false
        }
        if let constant = node.constValue, !SchemaEquality.equal(constant, instance) {
            fail("const", "must be \(Quote.json(constant)), not \(Quote.json(instance))")
            valid = false
        }
        switch instance {
        case .number(let literal) where !node.numeric.isEmpty:
            if let number = ExactNumber(literal: literal) { valid = checkNumber(node.numeric, number, literal) && valid }
        case .string(let text):
            valid = checkString(node, text) && valid
        default: break
        }
        return valid
    }

    private static func list(_ values: [JSONValue]) -> String {
        let shown = values.prefix(6).map { Quote.json($0, limit: 30) }.joined(separator: ", ")
        return values.count > 6 ? shown + ", … (\(values.count) values)" : shown
    }

    private mutating func checkNumber(_ bounds: NumericBounds, _ n: ExactNumber, _ literal: String) -> Bool {
        var valid = true
        if let m = bounds.multipleOf, !n.isMultiple(of: m) {
            fail("multipleOf", "\(literal) is not a multiple of \(m.text)")
            valid = false
        }
        if let min = bounds.minimum, n.compare(min) < 0 {
            fail("minimum", "\(literal) is less than the minimum \(min.text)")
            valid = false
        }
        if let max = bounds.maximum, n.compare(max) > 0 {
            fail("maximum", "\(literal) is more than the maximum \(max.text)")
            valid = false
        }
        if let min = bounds.exclusiveMinimum, n.compare(min) <= 0 {
            fail("exclusiveMinimum", "\(literal) must be more than \(min.text)")
            valid = false
        }
        if let max = bounds.exclusiveMaximum, n.compare(max) >= 0 {
            fail("exclusiveMaximum", "\(literal) must be less than \(max.text)")
            valid = false
        }
        return valid
    }

    private mutating func checkString(_ node: SchemaNode, _ text: String) -> Bool {
        var valid = true
        if node.minLength != nil || node.maxLength != nil {
            // Length is in Unicode code points, as the draft counts it; a string's UTF-8 length
            // bounds that from both sides (1 to 4 bytes a code point), so most are not counted.
            let bytes = text.utf8.count
            let surelyLongEnough = node.minLength.map { (bytes + 3) / 4 >= $0 } ?? true
            let surelyShortEnough = node.maxLength.map { bytes <= $0 } ?? true
            if !(surelyLongEnough && surelyShortEnough) {
                let length = text.unicodeScalars.count
                if let min = node.minLength, length < min {
                    fail("minLength", "is \(length) characters long, shorter than the minimum \(min)")
                    valid = false
                }
                if let max = node.maxLength, length > max {
                    fail("maxLength", "is \(length) characters long, longer than the maximum \(max)")
                    valid = false
                }
            }
        }
        if let pattern = node.pattern, !matches(pattern, text) {
            if overBudget { return false }
            fail("pattern", "\(Quote.text(text)) does not match the pattern \(pattern.source)")
            valid = false
        }
        if node.assertsFormat, let format = node.format, let problem = SchemaFormats.problem(format, text) {
            fail("format", "\(Quote.text(text)) is not \(problem)")
            valid = false
        }
        return valid
    }
}
