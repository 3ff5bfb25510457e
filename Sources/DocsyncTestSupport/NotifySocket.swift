import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Plays systemd's part in the notify protocol: a datagram socket in a temp folder, its path
/// for `NOTIFY_SOCKET`, and every message received, in order.
public final class NotifySocket: Sendable {
    public let path: String
    private let fd: Int32
    private let received = Mutex<[String]>([])
    private let open = Mutex(true)

    public init(folder: TempFolder) throws {
        path = folder.file("notify.sock")
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ProcessFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw ProcessFailure("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw ProcessFailure("bind \(path): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in receive() }
        thread.start()
    }

    private func receive() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while open.withLock({ $0 }) {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 {
                let message = String(decoding: buffer[0..<n], as: UTF8.self)
                received.withLock { $0.append(message) }
            }
        }
        Glibc.close(fd)
    }

    /// The messages so far, each as sent (`KEY=VALUE` lines).
    public var messages: [String] { received.withLock { $0 } }

    public func close() { open.withLock { $0 = false } }
}
