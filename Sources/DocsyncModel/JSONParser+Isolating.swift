/// An object of a reply's list that is well-formed JSON but cannot be a document here (a lone
/// surrogate escape, a duplicate key): left out of the list, with the id it names, if any.
public struct IsolatedElement: Sendable, Hashable {
    /// The element's own `id` (or `uuid`), when it has a plain one.
    public var id: String?
    public var reason: String

    public init(id: String?, reason: String) {
        self.id = id
        self.reason = reason
    }
}

/// One bad document stops one document: a reply's body is parsed with every object of a list
/// taken on its own, so a document the model cannot hold is rejected alone (reported with its id)
/// and the rest of the reply is used. Only the outermost lists are isolated: inside a document,
/// nothing is dropped (the whole document is). Syntax errors still fail the whole body: past one,
/// nothing can be trusted about where the next document starts.
extension JSONParser {
    /// Parses one JSON text as ``parse(_:maxDepth:maxValues:)`` does, leaving out (and returning)
    /// the unrepresentable objects of its lists, and those longer than `maxElementBytes` or holding
    /// more than `maxElementValues` values (a document over the limits is refused alone, whichever
    /// adapter's reply holds it). A left-out object's values are given back: `maxValues` counts
    /// what the parse keeps, so one large document left out does not refuse the reply.
    public static func parseIsolating(
        _ bytes: [UInt8], maxDepth: Int = maxDepth, maxElementBytes: Int = .max, maxElementValues: Int = .max, maxValues: Int = .max
    ) throws(JSONSyntaxError) -> (value: JSONValue, isolated: [IsolatedElement]) {
        var parser = JSONParser(bytes: bytes)
        parser.elementByteLimit = maxElementBytes
        parser.elementValueLimit = maxElementValues
        parser.valueLimit = maxValues
        parser.depthLimit = min(maxDepth, Self.maxDepth)
        parser.isolating = true
        return (try parser.parseText(), parser.isolated)
    }

    /// One object of a list; `nil` when it is well-formed but unrepresentable (then noted).
    mutating func parseIsolatedElement() throws(JSONSyntaxError) -> JSONValue? {
        let (start, level) = (index, depth)
        inIsolatedElement = true
        elementValuesBefore = values
        defer { inIsolatedElement = false }
        do {
            let value = try parseValue()
            guard index - start <= elementByteLimit else {
                values = elementValuesBefore
                isolated.append(IsolatedElement(
                    id: Self.idHint(bytes[start..<index]), reason: "it is \(index - start) bytes, over the limit of \(elementByteLimit) a document may have"))
                return nil
            }
            return value
        } catch where error.unrepresentable {
            (index, depth, values) = (start, level, elementValuesBefore)
            try skipObject()
            isolated.append(IsolatedElement(id: Self.idHint(bytes[start..<index]), reason: error.reason))
            return nil
        }
    }

    /// Moves past the object at `index` by its structure alone (strings, brackets).
    private mutating func skipObject() throws(JSONSyntaxError) {
        var level = 0
        repeat {
            guard let c = peek else { throw error("unexpected end of input inside an object") }
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["): level += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): level -= 1
            case UInt8(ascii: "\""):
                index = Self.endOfString(bytes, from: index)
                guard index <= bytes.count else { throw error("unterminated string") }
                continue
            default: break
            }
            index += 1
        } while level > 0
    }

    /// The index just past the string whose opening quote is at `start` (past the end if none).
    static func endOfString<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, from start: Int) -> Int where Bytes.Index == Int {
        var i = start + 1
        while i < bytes.count && bytes[i] != UInt8(ascii: "\"") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
        return i + 1
    }

    /// The `id` (or `uuid`) member of the object in `element`, at its own top level, when it is a
    /// plain identifier (read without parsing what could not be parsed).
    static func idHint(_ element: ArraySlice<UInt8>) -> String? {
        let bytes = Array(element)
        var (i, level, expectingValue) = (0, 0, false)
        var key: [UInt8] = []
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["): level += 1; expectingValue = false
            case UInt8(ascii: "}"), UInt8(ascii: "]"): level -= 1
            case UInt8(ascii: ":"): expectingValue = level == 1
            case UInt8(ascii: ","): expectingValue = false
            case UInt8(ascii: "\""):
                let end = endOfString(bytes, from: i)
                let raw = Array(bytes[(i + 1)..<max(i + 1, min(end - 1, bytes.count))])
                if level == 1 && expectingValue && (key == Array("id".utf8) || key == Array("uuid".utf8)) {
                    let id = String(decoding: raw, as: UTF8.self)
                    return DocumentRules.isSafeIdentifier(id) ? id : nil
                }
                if level == 1 && !expectingValue { key = raw }
                expectingValue = false
                i = end
                continue
            default: break
            }
            i += 1
        }
        return nil
    }
}
