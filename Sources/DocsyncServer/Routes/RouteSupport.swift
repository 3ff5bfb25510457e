import DocsyncStore
import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// What every route shares: reading a bounded JSON body, `{"data": …}` replies and errors.
extension ReferenceServer {
    /// A stored document reduced to what its writer does not already know.
    static func acknowledgement(_ doc: JSONObject) -> JSONObject {
        var ack = JSONObject()
        for key in ["id", DocumentRules.revKey, DocumentRules.updatedAtKey, DocumentRules.deletedAtKey] {
            if let value = doc[key] { ack[key] = value }
        }
        return ack
    }

    /// A path parameter, percent-decoded (`my%20notes` is the docType "my notes"); a malformed
    /// escape is kept as it came, and matches nothing.
    static func parameter(_ name: String, _ context: ServerRequestContext) -> String {
        let raw = context.parameters.get(name) ?? ""
        return percentDecoded(raw) ?? raw
    }

    /// `%XX` escapes decoded; `nil` for a malformed escape or bytes that are not UTF-8. Our own:
    /// Foundation's `removingPercentEncoding` crashed under concurrent requests on Linux.
    static func percentDecoded(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        func hex(_ c: UInt8?) -> UInt8? {
            switch c {
            case let c? where (0x30...0x39).contains(c): c - 0x30
            case let c? where (0x41...0x46).contains(c): c - 0x41 + 10
            case let c? where (0x61...0x66).contains(c): c - 0x61 + 10
            default: nil
            }
        }
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The `X-Docsync-Client` id a request names (an agent's own, so its writes are not echoed).
    /// The writer a request's writes are stored under: its `X-Docsync-Client` id, bound to the
    /// name of the token that sends it. A client id belongs to its token: another token sending the
    /// same id is another writer, so its writes still reach the first client's pulls (trust
    /// finding, fourth round, 9: they were left out, and that folder diverged in silence).
    static func client(_ request: Request, token: String?) -> String? {
        guard let name = HTTPField.Name("X-Docsync-Client"), let value = request.headers[name], DocumentRules.isSafeIdentifier(value) else { return nil }
        return (token ?? "") + ":" + value
    }

    /// A JSON document route's body: at most one document (``ProtocolLimits``), no deeper and with
    /// no more values than a document may have (the parse stops at the first value over).
    static func json(_ request: Request, limit: Int, pace: ConnectionLimits) async throws -> JSONValue {
        try await json(request, limit: limit, maxDepth: ProtocolLimits.maxDocumentDepth, maxValues: ProtocolLimits.maxDocumentRequestValues, pace: pace)
            .value
    }

    /// Reads a JSON body of at most `limit` bytes: a `Content-Length` over it is refused before a
    /// byte of the body is read (a client cannot make the server buffer what it will refuse), and
    /// a body without one is cut off at the limit while it streams; one that trickles in slower
    /// than the connection limits' pace is refused (408).
    static func json(
        _ request: Request, limit: Int, maxDepth: Int, maxValues: Int = .max, pace: ConnectionLimits
    ) async throws -> (value: JSONValue, depth: Int, values: Int) {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw StoreError(.tooLarge, "the request body is \(length) bytes, over the limit of \(limit) bytes")
        }
        var buffer = ByteBuffer()
        var paced = ConnectionLimits.BodyPace(limits: pace)
        let budget = pace.bodyBudget
        var taken = 0
        defer { budget.give(taken) }
        for try await piece in request.body {
            guard buffer.readableBytes + piece.readableBytes <= limit else {
                throw StoreError(.tooLarge, "the request body is over the limit of \(limit) bytes")
            }
            guard budget.take(piece.readableBytes) else {
                throw StoreError(.unavailable, "the server is reading too many request bodies at once; try again shortly")
            }
            taken += piece.readableBytes
            var piece = piece
            let size = piece.readableBytes
            buffer.writeBuffer(&piece)
            try paced.add(size)
        }
        return try parse(buffer, maxDepth: maxDepth, maxValues: maxValues, budget: budget, bodyBytes: taken)
    }

    /// Parses a body, charging its values to the budget (``ParsedCharge``): held until the
    /// request is answered, or until this returns where no request holds a charge.
    private static func parse(
        _ buffer: ByteBuffer, maxDepth: Int, maxValues: Int, budget: BodyBudget, bodyBytes: Int
    ) throws -> (value: JSONValue, depth: Int, values: Int) {
        let request = ParsedCharge.current
        let charge = request ?? ParsedCharge()
        defer { if request == nil { charge.release() } }
        do {
            return try JSONParser.parseCharging(Array(buffer: buffer), maxDepth: maxDepth, maxValues: maxValues) { values in
                charge.take(values: values, from: budget, alsoHeld: bodyBytes)
            }
        } catch where error.overBudget {
            charge.release()
            switch charge.refusal {
            case .tooLarge(let capacity)?:
                throw StoreError(.tooLarge, "the request's values would take more than the \(capacity >> 20) MiB the server holds for request bodies")
            case nil:
                throw StoreRules.tooManyValues
            default:
                throw StoreError(.unavailable, "the server is holding too many request bodies at once; try again shortly")
            }
        } catch {
            throw StoreError(.invalid, "the body is not valid JSON: \(error)")
        }
    }

    static func respond(status: HTTPResponse.Status = .ok, _ body: () async throws -> JSONValue) async throws -> Response {
        do {
            let data = try await body()
            var buffer = ByteBuffer(string: "{\"data\":")
            buffer.writeBytes(JSONWriter.bytes(data))
            buffer.writeString("}")
            return response(status, buffer)
        } catch {
            return errorResponse(error)
        }
    }

    static func errorResponse(_ error: any Error) -> Response {
        if let e = error as? StoreError {
            var object = JSONObject([(key: "error", value: .string(e.message))])
            if let current = e.current { object["data"] = current }
            if let right = e.right { object["right"] = .string(right) }
            var reply = response(.init(code: status(of: e.kind)), ByteBuffer(bytes: JSONWriter.bytes(.object(object))))
            // Unavailable is for now (the database away, too many bodies at once): when to ask again.
            if e.kind == .unavailable { reply.headers[.retryAfter] = "2" }
            return reply
        }
        if let e = error as? HTTPRefusal {
            var object = JSONObject([(key: "error", value: .string(e.message))])
            if let errors = e.errors { object["errors"] = errors }
            return response(.init(code: e.status), ByteBuffer(bytes: JSONWriter.bytes(.object(object))))
        }
        let object: JSONValue = ["error": .string("internal error: \(error)")]
        return response(.internalServerError, ByteBuffer(bytes: JSONWriter.bytes(object)))
    }

    /// What a store's refusal is in HTTP: the one place the two meet.
    static func status(of kind: StoreError.Kind) -> Int {
        switch kind {
        case .invalid: 400
        case .notFound: 404
        case .conflict: 409
        case .tooLarge: 413
        case .unavailable: 503
        case .full: 507
        case .failed: 500
        case .forbidden: 403
        }
    }

    static func response(_ status: HTTPResponse.Status, _ buffer: ByteBuffer) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }
}
