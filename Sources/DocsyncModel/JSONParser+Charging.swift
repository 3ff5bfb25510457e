/// Parsing with the memory it takes counted: what a server that parses bodies from anyone needs
/// (see ``parseCharging(_:maxDepth:maxValues:charge:)``).
extension JSONParser {
    /// Parses one JSON text as ``parseMeasuringDepth(_:maxDepth:maxValues:)`` does, telling `charge` of the
    /// values it makes as it goes (a few thousand at a time, and the rest at the end): once
    /// `charge` says no, the parse stops (``JSONSyntaxError/overBudget``). A parsed value takes
    /// tens of bytes where its text may take one (an array in an array), so a caller that must
    /// bound its memory counts what a parse makes, not what it reads.
    /// It also says how many values the text held.
    public static func parseCharging(
        _ bytes: [UInt8], maxDepth: Int, maxValues: Int = .max, charge: @escaping (Int) -> Bool
    ) throws(JSONSyntaxError) -> (value: JSONValue, depth: Int, values: Int) {
        var parser = JSONParser(bytes: bytes)
        parser.depthLimit = min(maxDepth, Self.maxDepth)
        parser.valueLimit = maxValues
        parser.charge = charge
        let value = try parser.parseText()
        if parser.uncharged > 0 { try parser.chargeUncharged() }
        return (value, parser.deepest, parser.values)
    }

    /// Values told to ``charge`` together.
    static let chargedTogether = 4096

    mutating func chargeUncharged() throws(JSONSyntaxError) {
        defer { uncharged = 0 }
        guard let charge, !charge(uncharged) else { return }
        var refused = error("the parsed values would take more memory than there is room for")
        refused.overBudget = true
        throw refused
    }
}
