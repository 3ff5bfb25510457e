/// Text a server sent, made safe for a commit: nothing it holds may start a new line (a forged
/// `Co-authored-by:` or `Signed-off-by:` trailer) or reorder what a reader sees (Unicode's
/// bidirectional controls, U+202E among them, as in "Trojan Source").
public enum GitText {
    /// `text` as one line: control characters and bidirectional controls escaped as `\u{…}`, cut
    /// to `maxBytes` (between characters, `…` marking the cut).
    public static func line(_ text: String, maxBytes: Int = 200) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if isHidden(scalar) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        guard out.utf8.count > maxBytes else { return out }
        var cut = ""
        for character in out {
            if cut.utf8.count + character.utf8.count > maxBytes - 3 { break }
            cut.append(character)
        }
        return cut + "…"
    }

    /// C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional
    /// embeddings, overrides, isolates and marks.
    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }
}
