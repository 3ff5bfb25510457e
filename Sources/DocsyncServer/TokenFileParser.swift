/// The grammar of `serve --token-file`, parsed strictly: a line that does not parse is an error
/// naming the line, never a token made of its last word.
///
/// Each line is one of:
/// - blank (spaces and tabs only);
/// - a comment: `#` as the first character that is not a space or tab;
/// - `TOKEN` (named `anonymous`) or `NAME TOKEN`, separated by spaces or tabs, optionally followed by
///   whitespace and a `#` comment (`alice s3cret   # rotated, ticket 42`).
///
/// A `#` inside a word is part of it (`s3#cret` is a token): a comment starts only at the start
/// of a line or after whitespace. A token line must be UTF-8; a comment may hold any bytes.
enum TokenFileParser {
    struct Entry: Equatable {
        var name: String
        var token: String
    }

    struct Failure: Error, Equatable, CustomStringConvertible {
        var line: Int
        var reason: String
        var description: String { "line \(line): \(reason)" }
    }

    /// The name of a token given without one: the author its writes carry (`updated_by`).
    static let anonymous = "anonymous"

    static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> [Entry] {
        var entries: [Entry] = []
        var number = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            if let entry = try parseLine(Array(line), number: number) { entries.append(entry) }
        }
        return entries
    }

    private static func parseLine(_ raw: [UInt8], number: Int) throws(Failure) -> Entry? {
        var words: [[UInt8]] = []
        var word: [UInt8] = []
        for byte in raw.last == UInt8(ascii: "\r") ? Array(raw.dropLast()) : raw {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                if !word.isEmpty { words.append(word) }
                word = []
            } else if byte == UInt8(ascii: "#") && word.isEmpty {
                break  // the rest of the line is a comment, whatever bytes it holds
            } else {
                word.append(byte)
            }
        }
        if !word.isEmpty { words.append(word) }
        guard !words.isEmpty else { return nil }
        guard words.count <= 2 else {
            throw Failure(line: number, reason: "\(words.count) words; a line is NAME TOKEN or TOKEN (a comment starts with # after a space)")
        }
        var texts: [String] = []
        for word in words {
            guard let text = String(validating: word, as: UTF8.self) else { throw Failure(line: number, reason: "not UTF-8") }
            guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw Failure(line: number, reason: "a control character")
            }
            texts.append(text)
        }
        return texts.count == 2 ? Entry(name: texts[0], token: texts[1]) : Entry(name: anonymous, token: texts[0])
    }
}
