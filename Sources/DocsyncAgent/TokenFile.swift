import DocsyncFiles
import Foundation

/// Reads a token file: the first line, trimmed. A token never needs to be on a command line.
public func readToken(file: String) throws -> String {
    let text = try String(contentsOfFile: file, encoding: .utf8)
    let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    guard !token.isEmpty else { throw FileSystemError("read token from", path: file, code: ENODATA) }
    return token
}
