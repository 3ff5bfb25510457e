import AsyncHTTPClient
import DocsyncEndpoint
import NIOCore
import NIOHTTP1

extension HTTPTransport {
    /// Streams the body of `GET url` to `sink` as it arrives (the client reads the next chunk
    /// only once `sink` has taken this one, so memory stays flat whatever the size). With
    /// `credentials`, the endpoint's credential goes along: only for URLs of its own server.
    ///
    /// A declared length over `maxBytes` is refused before any byte is read, a body that grows
    /// past it as soon as it does. A stalled body fails after the client's read timeout, and one
    /// that trickles fails once, past the request timeout, it has come slower than
    /// ``minimumRate`` on average: a server sending a byte every few seconds must not hold a
    /// download slot for ever. A redirect is not followed (the client follows none): a file is
    /// fetched from the server its URL names, or not at all.
    public func download(
        url: String, maxBytes: Int64, credentials: Bool = true, progress: DownloadProgress, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws(EndpointError) {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        if let clientID { request.headers.add(name: "X-Docsync-Client", value: clientID) }
        if credentials, let authorization = currentAuthorization { request.headers.add(name: "Authorization", value: authorization) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: requestTimeout)
        } catch {
            throw .unreachable(Self.describe(error))
        }
        let status = Int(response.status.code)
        switch status {
        case 200: break
        case 401: throw .unauthorized("\(status) for \(url)")
        case 403: throw .forbidden(right: nil, reason: "403 for \(url)")
        case 429, 500...599: throw .unavailable("\(status) for \(url)", retryAfter: nil)
        default: throw .rejected("\(status): the server does not serve \(url)")
        }
        if let declared = response.headers.first(name: "Content-Length").flatMap(Int64.init), declared > maxBytes {
            throw .rejected("the file is \(declared) bytes, over the download limit of \(maxBytes)")
        }
        var received: Int64 = 0
        let started = ContinuousClock.now
        do {
            for try await chunk in response.body {
                received += Int64(chunk.readableBytes)
                if received > maxBytes { throw Refused("the file is over the download limit of \(maxBytes) bytes") }
                if let why = Self.tooSlow(received: received, since: started, grace: .nanoseconds(requestTimeout.nanoseconds)) { throw TooSlow(why) }
                try chunk.withUnsafeReadableBytes { try sink($0) }
                progress.add(chunk.readableBytes)
            }
        } catch let refused as Refused {
            throw .rejected(refused.reason)
        } catch let slow as TooSlow {
            throw .unavailable("\(url): \(slow.reason)", retryAfter: nil)
        } catch let error as EndpointError {
            throw error
        } catch let error as HTTPClientError {
            throw .unreachable(Self.describe(error))
        } catch let error as IOError {
            throw .unreachable(Self.describe(error))
        } catch {
            throw .localFile("\(error)")  // the sink's own failure: the disk, not the network
        }
    }

    /// The slowest average a download may keep up past its grace period, bytes a second (the
    /// reference endpoint asks the same of request bodies).
    public static let minimumRate: Double = 16 * 1024

    /// Why a download that received `received` bytes since `since` is too slow to go on, if it is.
    static func tooSlow(received: Int64, since: ContinuousClock.Instant, grace: Duration) -> String? {
        let elapsed = ContinuousClock.now - since
        guard elapsed > grace else { return nil }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard Double(received) / seconds < minimumRate else { return nil }
        return "\(received) bytes in \(Int(seconds)) s, slower than \(Int(minimumRate / 1024)) KiB/s; tried again later"
    }

    private struct Refused: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private struct TooSlow: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
