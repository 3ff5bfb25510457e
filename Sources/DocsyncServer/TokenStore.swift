#if canImport(Glibc)
import DocsyncStore
import Glibc
#endif
import Foundation
import Synchronization

/// The tokens `docsync serve` accepts: one, or several named ones from a file that is read again
/// when it changes, so a token is added or revoked without a restart.
///
/// The file has one token a line, `NAME TOKEN` or just `TOKEN` (the grammar: ``TokenFileParser``).
/// It is looked at (one `stat`) at most once a second, on a request; a file that cannot be read,
/// does not parse or holds no token leaves the tokens as they were (a half-written file must not
/// lock everyone out). Tokens are never logged; their names may be.
public final class TokenStore: Sendable {
    private struct State {
        var tokens: [(name: String, bytes: [UInt8])]
        var stamp: FileStamp?
        var lastLook: ContinuousClock.Instant
    }

    private struct FileStamp: Equatable {
        var inode: UInt64, size: Int64, mtime: Int64
    }

    private let file: String?
    private let state: Mutex<State>

    /// A single token (from the environment, or generated).
    public init(token: String) {
        file = nil
        state = Mutex(State(tokens: [(TokenFileParser.anonymous, Self.header(token))], stamp: nil, lastLook: .now))
    }

    /// The tokens of `file`; throws if it holds none.
    public init(file: String) throws {
        self.file = file
        let (tokens, stamp): ([(name: String, bytes: [UInt8])], FileStamp?)
        switch Self.load(file) {
        case .success(let loaded): (tokens, stamp) = loaded
        case .failure(let problem): throw StoreError(.failed, "\(file): \(problem)")
        }
        state = Mutex(State(tokens: tokens, stamp: stamp, lastLook: .now))
    }

    /// The name of the token `authorization` (the whole header) presents, or nil. Compares with
    /// every token without an early exit, so timing does not tell how much of a guess matched.
    func name(of authorization: [UInt8]) -> String? {
        reloadIfChanged()
        var found: String?
        for token in state.withLock({ $0.tokens }) where Self.constantTimeEquals(authorization, token.bytes) {
            found = token.name
        }
        return found
    }

    private func reloadIfChanged() {
        guard let file else { return }
        let now = ContinuousClock.now
        let due = state.withLock { s -> Bool in
            guard now - s.lastLook >= .seconds(1) else { return false }
            s.lastLook = now
            return true
        }
        guard due, Self.stamp(file) != state.withLock({ $0.stamp }), case .success(let (tokens, stamp)) = Self.load(file) else { return }
        state.withLock {
            $0.tokens = tokens
            $0.stamp = stamp
        }
    }

    /// Why a token file cannot be used: it cannot be read, a line does not parse, or it holds no token.
    struct LoadProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// The file's tokens (see ``TokenFileParser``), or why there are none to use.
    private static func load(_ file: String) -> Result<([(name: String, bytes: [UInt8])], FileStamp?), LoadProblem> {
        let stamp = stamp(file)
        guard let data = FileManager.default.contents(atPath: file) else { return .failure(LoadProblem(description: "cannot be read")) }
        let entries: [TokenFileParser.Entry]
        do throws(TokenFileParser.Failure) {
            entries = try TokenFileParser.parse(data)
        } catch {
            return .failure(LoadProblem(description: "\(error); the line is NAME TOKEN or TOKEN"))
        }
        guard !entries.isEmpty else { return .failure(LoadProblem(description: "no token (one a line: NAME TOKEN, or TOKEN)")) }
        return .success((entries.map { ($0.name, header($0.token)) }, stamp))
    }

    private static func stamp(_ file: String) -> FileStamp? {
        var st = stat()
        guard stat(file, &st) == 0 else { return nil }
        return FileStamp(
            inode: UInt64(st.st_ino), size: Int64(st.st_size), mtime: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
    }

    private static func header(_ token: String) -> [UInt8] { Array("Token token=\(token)".utf8) }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0
    }
}
