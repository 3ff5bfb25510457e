import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 where no server answers, for as long as this value lives: a socket bound
/// to it that either never listens (every connect is refused) or listens and never accepts (the
/// kernel completes each connect and the request waits for a reply that never comes). Unlike a
/// port that was free a moment ago, no other server (a test running beside) can take it meanwhile
/// and answer in its place.
public final class DeadPort: Sendable {
    public enum Kind: Sendable { case refusing, silent }

    public let port: Int
    private let fd: Int32

    public init(_ kind: Kind) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, kind == .refusing || listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    deinit { close(fd) }
}
