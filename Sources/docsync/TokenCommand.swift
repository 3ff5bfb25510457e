import ArgumentParser
import DocsyncServer
import DocsyncStore
import Foundation

/// `docsync token add NAME [RIGHTS…] --token-file FILE`: a new token for `serve --token-file`.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Make tokens for `docsync serve --token-file`.", subcommands: [Add.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a token, print it once, and add its SHA-256 (never the token) to the token file.",
            discussion: """
                RIGHTS are read:T, write:T and create:T, T a docType or *; none gives every right. \
                Examples: `docsync token add viewer read:* --token-file tokens`, `docsync token add inbox create:report --token-file tokens`. \
                A running server takes the new line within a second (or at once on SIGHUP).
                """)

        @Argument(help: "The token's name: the author its writes carry (updated_by).")
        var name: String

        @Argument(help: "Its rights (read:T, write:T, create:T); none: every right.")
        var rights: [String] = []

        @Option(help: "The token file of `docsync serve --token-file` (made, mode 0600, if absent).")
        var tokenFile: String

        func validate() throws {
            guard !name.isEmpty, !name.hasPrefix("#"), !Access.looksLikeRight(name),
                  !name.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
            else { throw ValidationError("\"\(name)\" cannot be a token's name: one word, not a right, no spaces or control characters") }
            do {
                _ = try Access(rights: rights)
            } catch {
                throw ValidationError("\(error)")
            }
        }

        func run() async throws {
            var generator = SystemRandomNumberGenerator()
            let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
            let line = ([name, "sha256:" + TokenDigest.hex(TokenDigest.of(Array(token.utf8)))] + rights).joined(separator: " ") + "\n"
            let path = absolutePath(tokenFile)
            try Self.append(line, to: path)
            emit(token)
            FileHandle.standardError.write(Data("""
                the token above is shown once: give it to \(name) (a file holding it, for --token-file, or DOCSYNC_TOKEN)
                \(path) holds only its hash: \(line)
                """.utf8))
        }

        /// Appends `line`, after a newline if the file does not end with one; a new file is 0600.
        static func append(_ line: String, to path: String) throws {
            if !FileManager.default.fileExists(atPath: path) {
                guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                    throw ValidationError("cannot create the token file \(path)")
                }
            }
            guard let handle = FileHandle(forUpdatingAtPath: path) else { throw ValidationError("cannot open the token file \(path) to add to it") }
            defer { try? handle.close() }
            let end = try handle.seekToEnd()
            var text = line
            if end > 0 {
                try handle.seek(toOffset: end - 1)
                if handle.readData(ofLength: 1) != Data("\n".utf8) { text = "\n" + text }
                try handle.seekToEnd()
            }
            try handle.write(contentsOf: Data(text.utf8))
            try handle.synchronize()
        }
    }
}
