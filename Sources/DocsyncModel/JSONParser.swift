/// Why a text is not JSON, and where: the position is 1-based, the column counted in characters.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var reason: String
    /// Well-formed, but not a value the model can hold (a lone surrogate, a duplicate key): a
    /// document of a reply that is rejected alone (see ``JSONParser/parseIsolating(_:maxDepth:maxElementBytes:maxElementValues:maxValues:)``).
    public var unrepresentable = false
    /// Well-formed so far, but the parse was stopped: its values would take more memory than the
    /// caller gave it (``JSONParser/parseCharging(_:maxDepth:maxValues:charge:)``), or were more than it
    /// allows (`maxValues`).
    public var overBudget = false

    public var description: String { "line \(line), column \(column): \(reason)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes that keeps key order and number literals.
///
/// Strict on purpose: a sync tool that guessed at trailing commas or comments would push something
/// other than what the user sees in the file. Duplicate keys are rejected for the same reason.
public struct JSONParser: ~Copyable {
    /// Nesting deeper than this is refused rather than risking the stack on a hostile file.
    public static let maxDepth = 512

    let bytes: [UInt8]
    var index = 0
    var depth = 0
    var depthLimit = JSONParser.maxDepth
    /// The deepest nesting met, in containers.
    var deepest = 0
    /// Byte ranges of the top-level object's member values, when asked for.
    private var recordSpans = false
    /// Objects in arrays are parsed one by one, an unrepresentable one left out and noted
    /// (``parseIsolating(_:maxDepth:maxElementBytes:maxElementValues:maxValues:)``); inside such an object, nothing more is isolated.
    var isolating = false
    var inIsolatedElement = false
    var isolated: [IsolatedElement] = []
    /// An isolated element larger than this is left out too (see ``parseIsolating(_:maxDepth:maxElementBytes:maxElementValues:maxValues:)``).
    var elementByteLimit = Int.max
    private var spans: [(key: String, value: Range<Int>)] = []
    /// Told of the values parsed, a batch at a time (``parseCharging(_:maxDepth:maxValues:charge:)``).
    var charge: ((Int) -> Bool)?
    var uncharged = 0
    /// Values made and kept so far; more than ``valueLimit`` stops the parse (``JSONSyntaxError/overBudget``).
    var values = 0
    var valueLimit = Int.max
    /// An isolated element holding more values than this is left out, its values given back as it is.
    var elementValueLimit = Int.max
    var elementValuesBefore = 0
    /// Takes the objects of a listing's list instead of the list (``parseListing(_:maxElementBytes:maxElementValues:maxValues:each:)``).
    var listingSink: ((JSONValue, Range<Int>, Int) -> Void)?
    /// The array about to be parsed is the listing's (the top-level object's `data`).
    var nextArrayIsListing = false

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses one JSON text. A leading UTF-8 byte-order mark is tolerated.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = maxDepth, maxValues: Int = .max) throws(JSONSyntaxError) -> JSONValue {
        try parseMeasuringDepth(bytes, maxDepth: maxDepth, maxValues: maxValues).value
    }

    /// Parses one JSON text, refusing nesting deeper than `maxDepth` containers (at most
    /// ``maxDepth``), and says how deep the deepest container was. A text of more than `maxValues`
    /// values (objects, arrays and scalars) stops at the first one over, before it is made
    /// (``JSONSyntaxError/overBudget``): what a parse holds is bounded by values, not bytes.
    public static func parseMeasuringDepth(_ bytes: [UInt8], maxDepth: Int, maxValues: Int = .max) throws(JSONSyntaxError) -> (value: JSONValue, depth: Int) {
        var parser = JSONParser(bytes: bytes)
        parser.depthLimit = min(maxDepth, Self.maxDepth)
        parser.valueLimit = maxValues
        return (try parser.parseText(), parser.deepest)
    }

    /// The whole text as one value: a leading UTF-8 byte-order mark and whitespace around it
    /// allowed, nothing else after it. Every way of parsing a text ends here, its parser set up.
    mutating func parseText() throws(JSONSyntaxError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count { throw error("unexpected text after the end of the JSON value") }
        return value
    }

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// The byte range of each member value of the top-level object, in order: what an in-place edit
    /// of one member (replacing a copied file's id) needs to leave every other byte alone.
    public static func topLevelMemberSpans(_ bytes: [UInt8]) throws(JSONSyntaxError) -> [(key: String, value: Range<Int>)] {
        var parser = JSONParser(bytes: bytes)
        parser.recordSpans = true
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        _ = try parser.parseValue()
        return parser.spans
    }

    // MARK: - Grammar

    mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
        try count()
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character \(describeCurrent()), expected a value")
        }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        try enterContainer()
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        // Duplicate keys are found by comparing with the keys before; a set only pays for itself
        // in large objects.
        var seen: Set<String>?
        skipWhitespace()
        if peek == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else {
                throw error("expected a quoted key, found \(describeCurrent())")
            }
            let keyStart = index
            let key = try parseString()
            let duplicate: Bool
            if members.count < 16 {
                duplicate = members.contains { $0.key == key }
            } else {
                if seen == nil { seen = Set(members.map(\.key)) }
                duplicate = !seen!.insert(key).inserted
            }
            if duplicate { throw unrepresentable("duplicate key \"\(key)\"", at: keyStart) }
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw error("expected ':' after key \"\(key)\", found \(describeCurrent())") }
            index += 1
            skipWhitespace()
            let valueStart = index
            nextArrayIsListing = listingSink != nil && depth == 1 && key == "data"
            let value = try parseValue()
            if recordSpans && depth == 1 { spans.append((key, valueStart..<index)) }
            members.append((key, value))
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if peek == UInt8(ascii: "}") { throw error("trailing comma before '}'") }
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(JSONObject(members))
            default:
                throw error("expected ',' or '}' in object, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        let listing = listingSink != nil && (depth == 0 || nextArrayIsListing)
        nextArrayIsListing = false
        try enterContainer()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            if listing && peek == UInt8(ascii: "{") {
                try handOverListed()
            } else if isolating && !inIsolatedElement && peek == UInt8(ascii: "{") {
                if let element = try parseIsolatedElement() { elements.append(element) }
            } else {
                elements.append(try parseValue())
            }
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if peek == UInt8(ascii: "]") { throw error("trailing comma before ']'") }
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            default:
                throw error("expected ',' or ']' in array, found \(describeCurrent())")
            }
        }
    }

    /// Counts the value about to be made against the limits (an isolated element's first, so that
    /// one document over its own is left out rather than the whole text refused) and the charge.
    private mutating func count() throws(JSONSyntaxError) {
        values += 1
        if inIsolatedElement && values - elementValuesBefore > elementValueLimit {
            throw unrepresentable("it holds more than \(elementValueLimit) values, the most a document may have")
        }
        if values > valueLimit {
            var refused = error("more than \(valueLimit) values")
            refused.overBudget = true
            throw refused
        }
        uncharged += 1
        if uncharged == Self.chargedTogether { try chargeUncharged() }
    }

    private mutating func enterContainer() throws(JSONSyntaxError) {
        depth += 1
        if depth > deepest { deepest = depth }
        if depth > depthLimit { throw error("nesting deeper than \(depthLimit) levels") }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, isDigit(first) else { throw error("expected a digit in number") }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = peek, isDigit(next) { throw error("leading zeros are not allowed in numbers") }
        } else {
            while let c = peek, isDigit(c) { index += 1 }
        }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let c = peek, isDigit(c) else { throw error("expected a digit after the decimal point") }
            while let c = peek, isDigit(c) { index += 1 }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let c = peek, isDigit(c) else { throw error("expected a digit in the exponent") }
            while let c = peek, isDigit(c) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func expectLiteral(_ word: String) throws(JSONSyntaxError) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw error("unexpected character \(describeCurrent()), expected a value")
        }
        index += expected.count
    }

    // MARK: - Helpers

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    func describeCurrent() -> String {
        guard index < bytes.count else { return "end of input" }
        let c = bytes[index]
        if c >= 0x21 && c < 0x7F { return "'\(Character(Unicode.Scalar(c)))'" }
        return "byte 0x\(String(c, radix: 16, uppercase: true))"
    }

    func hex4(_ v: UInt16) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - s.count) + s
    }

    func unrepresentable(_ reason: String, at position: Int? = nil) -> JSONSyntaxError {
        var failure = error(reason, at: position)
        failure.unrepresentable = true
        return failure
    }

    func error(_ reason: String, at position: Int? = nil) -> JSONSyntaxError {
        let end = min(position ?? index, bytes.count)
        var line = 1
        var column = 1
        for byte in bytes[0..<end] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return JSONSyntaxError(line: line, column: column, reason: reason)
    }
}
