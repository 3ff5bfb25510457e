import DocsyncModel
import DocsyncStore

/// The grammar of `serve --token-file`, parsed strictly: a line that does not parse is an error
/// naming the line, never a token made of its last word.
///
/// Each line is one of:
/// - blank (spaces and tabs only);
/// - a comment: `#` as the first character that is not a space or tab;
/// - `TOKEN` (named `anonymous`) or `NAME TOKEN`, then the token's rights if it has only some
///   (`read:* write:note`, see ``Access``), separated by spaces or tabs, optionally followed by
///   whitespace and a `#` comment (`bob 77ab… read:* write:note   # ticket 42`).
///
/// `TOKEN` is the secret, or `sha256:` and the 64 hex digits of its SHA-256, so the file need not
/// hold it. A `#` inside a word is part of it (`s3#cret` is a token): a comment starts only at the
/// start of a line or after whitespace. A token line must be UTF-8; a comment may hold any bytes.
enum TokenFileParser {
    struct Entry: Equatable {
        var name: String
        /// SHA-256 of the token: what a presented token is looked up by.
        var digest: [UInt8]
        var access: Access
    }

    struct Failure: Error, Equatable, CustomStringConvertible {
        var line: Int
        var reason: String
        var description: String { "line \(line): \(reason)" }
    }

    /// The name of a token given without one: the author its writes carry (`updated_by`).
    static let anonymous = "anonymous"
    static let hashPrefix = "sha256:"

    /// Every line, or the first that does not parse.
    static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> [Entry] {
        let (entries, failures) = parseLeniently(bytes)
        if let first = failures.first { throw first }
        return entries
    }

    /// The lines that parse, and why each other line does not: a file read again while the server
    /// runs takes what it can (a bad line grants nothing), and every failure is logged.
    static func parseLeniently(_ bytes: some Collection<UInt8>) -> (entries: [Entry], failures: [Failure]) {
        var entries: [Entry] = []
        var failures: [Failure] = []
        var number = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            do throws(Failure) {
                if let entry = try parseLine(Array(line), number: number) { entries.append(entry) }
            } catch {
                failures.append(error)
            }
        }
        return (entries, failures)
    }

    private static func parseLine(_ raw: [UInt8], number: Int) throws(Failure) -> Entry? {
        let texts = try words(raw, number: number)
        guard !texts.isEmpty else { return nil }
        let first = texts.firstIndex(where: Access.looksLikeRight) ?? texts.count
        guard first == 1 || first == 2 else {
            throw Failure(
                line: number,
                reason: first == 0 ? "a line starts with NAME TOKEN or TOKEN, then rights" : "\(first) words before the rights; a line is NAME TOKEN [RIGHTS…] (a comment starts with # after a space)")
        }
        let access: Access
        do throws(AccessError) {
            access = try Access(rights: Array(texts[first...]))
        } catch {
            throw Failure(line: number, reason: "\(error)")
        }
        let (name, token) = first == 2 ? (texts[0], texts[1]) : (anonymous, texts[0])
        return Entry(name: name, digest: try digest(of: token, number: number), access: access)
    }

    /// The line's words, checked: UTF-8, no control characters.
    private static func words(_ raw: [UInt8], number: Int) throws(Failure) -> [String] {
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
        var texts: [String] = []
        for word in words {
            guard let text = String(validating: word, as: UTF8.self) else { throw Failure(line: number, reason: "not UTF-8") }
            guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw Failure(line: number, reason: "a control character")
            }
            texts.append(text)
        }
        return texts
    }

    /// The token's SHA-256: given as `sha256:<64 hex>`, or computed from the secret.
    private static func digest(of token: String, number: Int) throws(Failure) -> [UInt8] {
        guard token.hasPrefix(hashPrefix) else { return TokenDigest.of(Array(token.utf8)) }
        let hex = Array(token.utf8.dropFirst(hashPrefix.utf8.count))
        guard hex.count == 64, let bytes = Hex.decode(hex) else {
            throw Failure(line: number, reason: "sha256: must be followed by the 64 hex digits of the token's SHA-256")
        }
        return bytes
    }
}
