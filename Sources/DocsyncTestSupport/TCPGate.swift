import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP forwarder on 127.0.0.1 that a test opens and closes: closed, connecting is refused and
/// every connection through it is cut, as when a database host goes away; open, bytes flow both
/// ways untouched. The database behind it stays up for every other test.
public final class TCPGate: Sendable {
    public let port: Int
    private let upstreamPort: Int
    private let state = Mutex<(listener: Int32, connections: [Int32], generation: Int)>((-1, [], 0))

    /// A gate in front of `127.0.0.1:upstreamPort`, closed until ``open()``.
    public init(upstreamPort: Int) {
        self.upstreamPort = upstreamPort
        self.port = freePort()
    }

    /// Listens and forwards.
    public func open() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        let generation = state.withLock { s in
            s.listener = fd
            s.generation += 1
            return s.generation
        }
        Thread { [self] in accepting(fd, generation: generation) }.start()
    }

    /// Stops listening and cuts every connection through the gate.
    public func shut() {
        let (listener, connections) = state.withLock { s in
            defer { s = (-1, [], s.generation + 1) }
            return (s.listener, s.connections)
        }
        if listener >= 0 {
            Glibc.shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
        for fd in connections { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func accepting(_ listener: Int32, generation: Int) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let kept = state.withLock { s in
                guard s.generation == generation, connected == 0 else { return false }
                s.connections += [client, upstream]
                return true
            }
            guard kept else {
                close(client)
                close(upstream)
                continue
            }
            Thread { Self.pump(from: client, to: upstream) }.start()
            Thread { Self.pump(from: upstream, to: client) }.start()
        }
    }

    private static func pump(from source: Int32, to target: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = read(source, &buffer, buffer.count)
            if n <= 0 { break }
            var sent = 0
            while sent < n {
                let w = buffer[sent..<n].withUnsafeBytes { write(target, $0.baseAddress, $0.count) }
                if w <= 0 { break }
                sent += w
            }
            if sent < n { break }
        }
        Glibc.shutdown(source, Int32(SHUT_RDWR))
        Glibc.shutdown(target, Int32(SHUT_RDWR))
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
