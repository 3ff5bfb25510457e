#if canImport(Glibc)
import Glibc
#endif
import Crypto
import DocsyncModel
import DocsyncStore
import Foundation
import Logging
import Synchronization

/// Who a request's token is: its name (the author its writes carry) and what it may do.
public struct TokenIdentity: Sendable, Hashable {
    public var name: String
    public var access: Access
}

/// The tokens `docsync serve` accepts: one, or several named ones from a file that is read again
/// when it changes (or on SIGHUP), so a token is added, limited or revoked without a restart.
///
/// The file's grammar is ``TokenFileParser``. At start a line that does not parse stops the
/// server with its number. Read again, the file is what it says: a token no longer in it is
/// revoked at once, a line that does not parse grants nothing and is logged with its number, and
/// an empty file (or one that cannot be read) leaves no token valid. Each reload is logged with the
/// names added, removed and whose rights changed. Tokens are never logged; their names may be.
///
/// A presented token is looked up by its SHA-256, so the file may hold hashes instead of secrets
/// and a lookup costs the same with a hundred tokens as with one.
public final class TokenStore: Sendable {
    private struct State {
        var byDigest: [[UInt8]: TokenIdentity]
        var stamp: FileStamp?
        var lastLook: ContinuousClock.Instant
    }

    private struct FileStamp: Equatable {
        var inode: UInt64, size: Int64, mtime: Int64
    }

    private let file: String?
    private let logger: Logger
    private let state: Mutex<State>

    /// A single token (from the environment, or generated), with every right.
    public init(token: String, logger: Logger = Logger(label: "docsync.tokens")) {
        file = nil
        self.logger = logger
        let identity = TokenIdentity(name: TokenFileParser.anonymous, access: .everything)
        state = Mutex(State(byDigest: [TokenDigest.of(Array(token.utf8)): identity], stamp: nil, lastLook: .now))
    }

    /// The tokens of `file`; throws, naming the line, if one does not parse or none is there.
    public init(file: String, logger: Logger = Logger(label: "docsync.tokens")) throws {
        self.file = file
        self.logger = logger
        let stamp = Self.stamp(file)
        guard let data = FileManager.default.contents(atPath: file) else { throw StoreError(.failed, "\(file): cannot be read") }
        let entries: [TokenFileParser.Entry]
        do throws(TokenFileParser.Failure) {
            entries = try TokenFileParser.parse(data)
        } catch {
            throw StoreError(.failed, "\(file): \(error); a line is NAME TOKEN [RIGHTS…] or TOKEN [RIGHTS…]")
        }
        guard !entries.isEmpty else { throw StoreError(.failed, "\(file): no token (one a line: NAME TOKEN [RIGHTS…], or TOKEN)") }
        state = Mutex(State(byDigest: Self.table(entries), stamp: stamp, lastLook: .now))
    }

    /// Who the token that `authorization` (the whole header, `Token token=…`) presents is, or nil.
    public func identify(_ authorization: [UInt8]) -> TokenIdentity? {
        reloadIfChanged()
        let prefix = Self.scheme
        guard authorization.count > prefix.count, authorization.starts(with: prefix) else { return nil }
        let digest = TokenDigest.of(authorization[prefix.count...])
        return state.withLock { $0.byDigest[digest] }
    }

    /// The name of the token `authorization` presents, or nil.
    func name(of authorization: [UInt8]) -> String? { identify(authorization)?.name }

    static let scheme = Array("Token token=".utf8)

    /// Reads the file again now, changed or not (SIGHUP).
    public func reload() {
        guard let file else { return }
        apply(Self.stamp(file), file: file)
    }

    private func reloadIfChanged() {
        guard let file else { return }
        let now = ContinuousClock.now
        let due = state.withLock { s -> Bool in
            guard now - s.lastLook >= .seconds(1) else { return false }
            s.lastLook = now
            return true
        }
        guard due else { return }
        let stamp = Self.stamp(file)
        guard stamp != state.withLock({ $0.stamp }) else { return }
        apply(stamp, file: file)
    }

    /// The file as it is now, whatever it says: revocations take effect, bad lines grant nothing.
    private func apply(_ stamp: FileStamp?, file: String) {
        let data = FileManager.default.contents(atPath: file)
        let (entries, failures) = data.map { TokenFileParser.parseLeniently($0) } ?? ([], [])
        if data == nil { logger.error("the token file \(file) cannot be read: no token is valid until it can") }
        for failure in failures { logger.error("the token file \(file), \(failure): that line grants nothing") }
        let table = Self.table(entries)
        let old = state.withLock { s -> [[UInt8]: TokenIdentity] in
            let old = s.byDigest
            (s.byDigest, s.stamp) = (table, stamp)
            return old
        }
        logChanges(from: old, to: table, file: file)
    }

    private func logChanges(from old: [[UInt8]: TokenIdentity], to new: [[UInt8]: TokenIdentity], file: String) {
        let added = new.filter { old[$0.key] == nil }.map(\.value.name).sorted()
        let removed = old.filter { new[$0.key] == nil }.map(\.value.name).sorted()
        let changed = new.filter { entry in old[entry.key].map { $0 != entry.value } ?? false }.map(\.value.name).sorted()
        logger.notice("the token file \(file) was read again", metadata: [
            "tokens.count": "\(new.count)", "tokens.added": "\(added.joined(separator: ","))", "tokens.removed": "\(removed.joined(separator: ","))",
            "tokens.rights_changed": "\(changed.joined(separator: ","))",
        ])
        if new.isEmpty { logger.warning("the token file \(file) holds no token: every request is refused") }
    }

    private static func table(_ entries: [TokenFileParser.Entry]) -> [[UInt8]: TokenIdentity] {
        var table: [[UInt8]: TokenIdentity] = [:]
        for entry in entries { table[entry.digest] = TokenIdentity(name: entry.name, access: entry.access) }
        return table
    }

    private static func stamp(_ file: String) -> FileStamp? {
        var st = stat()
        guard stat(file, &st) == 0 else { return nil }
        return FileStamp(
            inode: UInt64(st.st_ino), size: Int64(st.st_size), mtime: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
    }
}

/// A token's SHA-256, as the token file may hold it (`sha256:<hex>`).
public enum TokenDigest {
    public static func of(_ token: some Sequence<UInt8>) -> [UInt8] { Array(SHA256.hash(data: Array(token))) }

    public static func hex(_ digest: [UInt8]) -> String { Hex.encode(digest) }
}
