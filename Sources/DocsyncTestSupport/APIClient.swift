import AsyncHTTPClient
import DocsyncModel
import Foundation
import NIOCore

/// A small client for the reference endpoint, for tests and the benchmark to check what the
/// server holds (as a user would with curl).
public struct APIClient: Sendable {
    public let baseURL: String
    public let token: String
    public let client: HTTPClient

    public init(baseURL: String, token: String, client: HTTPClient = .shared) {
        self.baseURL = baseURL
        self.token = token
        self.client = client
    }

    public struct Reply: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var headers: [(String, String)]
        public var json: JSONValue? { try? JSONParser.parse(body) }
        public var text: String { String(decoding: body, as: UTF8.self) }
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    public func request(_ method: String, _ path: String, body: String? = nil, token: String?? = .none, headers: [(String, String)] = []) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .init(rawValue: method)
        switch token {
        case .none: request.headers.add(name: "Authorization", value: "Token token=\(self.token)")
        case .some(.some(let t)): request.headers.add(name: "Authorization", value: "Token token=\(t)")
        case .some(.none): break
        }
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 30)
        return Reply(status: Int(response.status.code), body: Array(buffer: bytes), headers: response.headers.map { ($0.name, $0.value) })
    }

    /// Downloads `url` (absolute, as a document holds it) with this client's token, hashing the
    /// body as it arrives: the status, the headers and the SHA-256 and length of the body.
    public func download(_ url: String, token: String?? = .none) async throws -> (status: Int, headers: [(String, String)], sha256: String, length: Int64) {
        var request = HTTPClientRequest(url: url)
        switch token {
        case .none: request.headers.add(name: "Authorization", value: "Token token=\(self.token)")
        case .some(.some(let t)): request.headers.add(name: "Authorization", value: "Token token=\(t)")
        case .some(.none): break
        }
        let response = try await client.execute(request, timeout: .seconds(300))
        var hasher = ContentHasher()
        var length: Int64 = 0
        for try await chunk in response.body {
            chunk.withUnsafeReadableBytes { hasher.update($0) }
            length += Int64(chunk.readableBytes)
        }
        return (Int(response.status.code), response.headers.map { ($0.name, $0.value) }, hasher.finalize(), length)
    }

    /// A FileUpload as the seed's client sends it (the file in memory: for small test files).
    public func upload(_ bytes: [UInt8], fileName: String, targetID: String, docType: String, property: String) async throws -> Reply {
        let boundary = "test-boundary-7f3a"
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(fileName)\"\r\n\r\n".utf8)
        body += bytes
        body += Array("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"targetDocument\"\r\n\r\n".utf8)
        body += Array(#"{"targetId":"\#(targetID)","targetDocType":"\#(docType)","targetProperty":"\#(property)"}"#.utf8)
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        var request = HTTPClientRequest(url: baseURL + "/api/app/upload")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Token token=\(token)")
        request.headers.add(name: "Content-Type", value: "multipart/form-data; boundary=\(boundary)")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 1 << 24)
        return Reply(status: Int(response.status.code), body: Array(buffer: bytes), headers: response.headers.map { ($0.name, $0.value) })
    }

    /// Every document of `docType` (tombstones included), keyed by id.
    public func documents(type docType: String) async throws -> [String: JSONObject] {
        let reply = try await request("GET", "/api/document/type/\(docType)")
        guard reply.status == 200, case .array(let docs)? = reply.json?.object?["data"] else {
            throw ProcessFailure("GET /api/document/type/\(docType) answered \(reply.status): \(reply.text)")
        }
        var out: [String: JSONObject] = [:]
        for case .object(let o) in docs { if let id = o["id"]?.string { out[id] = o } }
        return out
    }
}
