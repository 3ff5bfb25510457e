#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// HTTP spoken by hand over a socket: what a hostile or broken client sends (a Content-Length it
/// never delivers, headers that never end, a forged Host), which an HTTP client library refuses to.
public enum RawHTTP {
    /// A TCP connection to 127.0.0.1:`port`, or nil when the server does not accept it.
    public static func connect(port: Int, receiveTimeout: Duration = .seconds(10)) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        let (seconds, attos) = receiveTimeout.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attos / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Writes `text`; false if the connection is gone.
    @discardableResult
    public static func send(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// What arrives until the peer closes, the receive timeout passes, or `until` says enough.
    public static func receive(_ fd: Int32, until enough: (String) -> Bool = { $0.contains("\r\n\r\n") }) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[..<n]
            if enough(String(decoding: received, as: UTF8.self)) { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Sends `head` (and `body`) on a new connection and returns what the server answered (its
    /// head at least), without sending anything more.
    public static func exchange(port: Int, head: String, body: String = "", receiveTimeout: Duration = .seconds(10)) async throws -> String {
        try await offPool { () -> Result<String, ProcessFailure> in
            guard let fd = connect(port: port, receiveTimeout: receiveTimeout) else { return .failure(ProcessFailure("cannot connect to port \(port)")) }
            defer { close(fd) }
            send(fd, head + body)
            return .success(receive(fd))
        }.get()
    }

    /// Runs `body` (blocking socket calls) on a thread of its own, and waits for it without
    /// holding one of Swift's cooperative threads. A `recv` blocked there holds one of as many
    /// threads as the machine has cores: two such tests at once on two cores left the servers
    /// running in the test process no thread to answer on, and both waited out their timeouts.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}
