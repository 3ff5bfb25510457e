/// ECMA-262's regular-expression meanings that PCRE2 reads otherwise, rewritten into PCRE2's
/// syntax before a pattern is compiled (PCRE2 is compiled with `PCRE2_ALT_BSUX`, so `\uHHHH` is a
/// code point as in ECMA-262):
/// - `\s` and `\S` are Unicode whitespace in ECMA-262, ASCII in PCRE2 without UCP (which would
///   also widen `\d`, `\w` and `\b`, ASCII in both): spelled out. Inside a class `\s` is spelled
///   out too; `\S` there keeps PCRE2's ASCII meaning (docs/SCHEMAS.md).
/// - `.` leaves out every line terminator (`\r`, U+2028, U+2029), not only `\n`.
/// - `\p{…}` takes long General_Category names (`Letter`, `digit`) and `Script=` forms, which
///   PCRE2 10.42 does not: given their short names.
enum ECMAPattern {
    static let whitespace = #"\t\n\u000B\f\r \u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF"#
    static let anyButLineTerminator = #"[^\n\r\u2028\u2029]"#

    static func translate(_ pattern: String) -> String {
        var out = ""
        out.reserveCapacity(pattern.utf8.count + 16)
        var inClass = false
        var scalars = pattern.unicodeScalars[...]
        while let c = scalars.popFirst() {
            switch c {
            case "\\":
                guard let next = scalars.popFirst() else {
                    out.unicodeScalars.append(c)
                    continue
                }
                switch (next, inClass) {
                case ("s", false): out += "[\(whitespace)]"
                case ("S", false): out += "[^\(whitespace)]"
                case ("s", true): out += whitespace
                case ("p", _), ("P", _): out += property(next, &scalars)
                default:
                    out.unicodeScalars.append(c)
                    out.unicodeScalars.append(next)
                }
            case "[" where !inClass:
                inClass = true
                out.unicodeScalars.append(c)
                if scalars.first == "^" { out.unicodeScalars.append(scalars.removeFirst()) }
            case "]" where inClass:
                inClass = false
                out.unicodeScalars.append(c)
            case "." where !inClass:
                out += anyButLineTerminator
            default:
                out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// `\p{name}` (or `\P`) with `name` as PCRE2 knows it; the text after `\p` is consumed up to
    /// the closing brace. Anything else is passed on for PCRE2 to judge.
    private static func property(_ letter: Unicode.Scalar, _ scalars: inout Substring.UnicodeScalarView) -> String {
        guard scalars.first == "{", let close = scalars.firstIndex(of: "}") else { return "\\\(letter)" }
        var name = String(String.UnicodeScalarView(scalars[scalars.index(after: scalars.startIndex)..<close]))
        scalars = scalars[scalars.index(after: close)...]
        if let equals = name.firstIndex(of: "=") {
            let key = name[..<equals]
            let value = String(name[name.index(after: equals)...])
            name = ["General_Category", "gc"].contains(key) ? (generalCategories[value] ?? value) : value
        } else {
            name = generalCategories[name] ?? name
        }
        return "\\\(letter){\(name)}"
    }

    /// Unicode's long General_Category names (and ECMA-262's aliases) to the short ones.
    static let generalCategories: [String: String] = [
        "Letter": "L", "Cased_Letter": "L&", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
        "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn",
        "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd",
        "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc",
        "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
        "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc",
        "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs", "Line_Separator": "Zl",
        "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs",
        "Private_Use": "Co", "Unassigned": "Cn",
    ]
}
