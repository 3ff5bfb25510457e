import DocsyncEndpoint
import DocsyncFiles
import Foundation
import Synchronization

/// The token the agent sends, and the file it comes from. When the endpoint refuses the token in
/// use, the file is read again, and a token from it is taken only if it is neither the one in use
/// nor one the endpoint has refused already: a file changed from one wrong token to another wrong
/// token is tried once, not every few seconds for as long as it stays wrong.
///
/// One holder serves the pusher, the uploader and the downloader, so a token refused on one path
/// is not tried again on another.
public final class Credential: Sendable {
    private struct State {
        var current: String
        var refused: Set<String> = []
        var lastLook: ContinuousClock.Instant?
    }

    /// How often ``changedInFile(force:)`` reads the file.
    static let lookEvery: Duration = .seconds(5)

    private let file: String?
    private let state: Mutex<State>

    public init(token: String, file: String?) {
        self.file = file
        state = Mutex(State(current: token))
    }

    /// The token in use.
    public var current: String { state.withLock { $0.current } }

    /// The endpoint refused the token in use.
    public func refuse() {
        state.withLock { _ = $0.refused.insert($0.current) }
    }

    /// The endpoint refused the token in use: a replacement from the file, if there is one, is
    /// what it is sent from now on.
    func refusedBy(_ endpoint: any DocumentEndpoint) {
        refuse()
        if let token = replacement() { endpoint.useCredential(token) }
    }

    /// A token not refused yet: the one in use (another path may have replaced the refused one
    /// already), or a replacement from the file; `nil` while there is none.
    public func usable() -> String? {
        let current = state.withLock { $0.refused.contains($0.current) ? nil : $0.current }
        return current ?? replacement()
    }

    /// A new token in the file (read at most every ``lookEvery``, or now with `force`): in use from
    /// now on; nil when the file holds the token in use, a refused one, or cannot be read. Writes
    /// the token was not allowed to make are tried again with it.
    public func changedInFile(force: Bool = false) -> String? {
        guard file != nil else { return nil }
        let now = ContinuousClock.now
        let due = state.withLock { s -> Bool in
            guard force || s.lastLook.map({ now - $0 >= Self.lookEvery }) ?? true else { return false }
            s.lastLook = now
            return true
        }
        return due ? replacement() : nil
    }

    /// A token from the file that is not in use and was not refused, which is in use from now on;
    /// `nil` when the file holds no such token (or cannot be read).
    public func replacement() -> String? {
        guard let file, let token = try? readToken(file: file) else { return nil }
        return state.withLock { s in
            guard token != s.current, !s.refused.contains(token) else { return nil }
            s.current = token
            return token
        }
    }
}

/// Reads a token file: the first line, trimmed. A token never needs to be on a command line.
/// Errors name the file and the reason in a line (`read token from F: No such file or directory`).
public func readToken(file: String) throws -> String {
    let fd = open(file, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw FileSystemError("read token from", path: file) }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 64 << 10)
    let count = read(fd, &bytes, bytes.count)
    guard count >= 0 else { throw FileSystemError("read token from", path: file) }
    guard let text = String(validating: bytes[..<count], as: UTF8.self) else {
        throw FileSystemError("read token from", path: file, code: EILSEQ)
    }
    let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    guard !token.isEmpty else { throw FileSystemError("read token from", path: file, code: ENODATA) }
    return token
}
