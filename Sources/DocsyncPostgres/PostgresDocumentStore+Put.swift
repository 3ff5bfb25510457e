import DocsyncModel
import DocsyncStore
import Logging
import PostgresNIO

/// A single write, outside a transaction where it can: the row is stored by one statement that
/// takes the document's lock (the one batches take), then the counter, and writes the row only if
/// the stored revision is the one the rules were applied to. The counter's lock is then held for
/// that statement and its commit alone, within the server, not across round trips.
///
/// The write first guesses the stored revision: the base the client names, else none (a create).
/// A create of a new document, or an update naming the current base, is then one statement. A
/// wrong guess stores nothing (and, seen in the statement's snapshot, takes no change number) and
/// costs one more round trip: the revision's read and the write again. A write that lost a race to
/// another then runs as a transaction holding the document's lock from its read to its commit,
/// which no other write of that document can overtake.
extension PostgresDocumentStore {
    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client writer: String?, access: Access) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        let written = try await client.withConnection { connection -> JSONObject? in
            // A guess does not read the stored docType: a token with rights reads it first.
            if access.isEverything, let guessed = try await Self.putGuessing(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, writer: writer, maxBytes: maxBytes, on: connection, logger: self.logger)
            {
                return guessed
            }
            return try await Self.put(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, writer: writer, maxBytes: maxBytes, access: access, on: connection,
                logger: self.logger)
        }
        if let written { return written }
        return try await transaction { connection in
            try await Self.lockDocuments([object["id"]?.string ?? ""], connection, logger: self.logger)
            return try await Self.putHoldingLock(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, writer: writer, maxBytes: maxBytes, access: access, on: connection,
                logger: self.logger)
        }
    }

    /// How often a transaction that met a concurrent write of its documents (or a deadlock) is run.
    static let attempts = 5
    static let keptRacing = StoreError(.unavailable, "the write kept meeting concurrent writes of the same document; try again")

    /// The write on the guess that the stored revision is `ifMatch` (none without one); `nil`
    /// when the guess was wrong, or the rules refuse it on the guess (the caller reads the
    /// revision and decides on what is there).
    static func putGuessing(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, writer: String?, maxBytes: Int,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> JSONObject? {
        guard let version = try? StoreRules.write(input, existingRev: ifMatch, ifMatch: ifMatch, mustCreate: mustCreate, now: now, maxBytes: maxBytes)
        else { return nil }
        return try await store(version, over: ifMatch, now: now, writer: writer, connection, logger: logger) ? version.object : nil
    }

    /// One write: the revision, the rules, then the storing statement. `nil`: another write came
    /// first; the caller runs this again (outside a transaction) or the transaction again.
    static func put(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, writer: String?, maxBytes: Int, access: Access = .everything,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> JSONObject? {
        let id = input["id"]?.string ?? ""
        let existing = try await Self.existing(id, connection, logger: logger)
        let version: StoreRules.Version
        do {
            version = try StoreRules.write(
                input, existing: existing, ifMatch: ifMatch, mustCreate: mustCreate, now: now, maxBytes: maxBytes, access: access)
        } catch {
            guard error.kind == .conflict else { throw error }
            let current = try await stored(id, earlier: nil, writer: writer, connection, logger: logger)
            throw error.holding(current.body, writtenBy: current.writer, asking: writer, access: access)
        }
        return try await store(version, over: existing?.rev, now: now, writer: writer, connection, logger: logger) ? version.object : nil
    }

    /// ``put`` in a transaction that holds the document's lock, which no write of the document
    /// overtakes: should one have, the transaction runs again.
    static func putHoldingLock(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, writer: String?, maxBytes: Int, access: Access = .everything,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> JSONObject {
        guard let written = try await put(
            input, now: now, ifMatch: ifMatch, mustCreate: mustCreate, writer: writer, maxBytes: maxBytes, access: access, on: connection, logger: logger)
        else { throw WriteRace() }
        return written
    }

    /// Stores `version` if the stored revision is still `existing` (`nil`: no row): the
    /// document's lock, the next change number (the counter's lock, held to the commit; not
    /// taken when the statement's snapshot already shows another revision), the row and the
    /// notification in one statement. Whether it was stored. (A batch writes its rows in one statement of its
    /// own: `insert` in `PostgresDocumentStore+Batch.swift`; one row through it measured no
    /// faster, perhaps slower.)
    static func store(
        _ version: StoreRules.Version, over existing: Int64?, now: Int64, writer: String?, _ connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.execute(
            StoreRow(version: version, existing: existing, now: now, storedAt: storedNow(), writer: writer), logger: logger)
        var written = false
        for try await _ in rows { written = true }
        return written
    }
}

/// The storing statement of a single write, prepared once per connection: PostgreSQL parses and
/// plans it once, not at every write.
struct StoreRow: PostgresPreparedStatement {
    static let sql = """
        WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(1, hashtext($1))::text),
        c AS (UPDATE docsync_counter SET seq = seq + 1 FROM l WHERE docsync_counter.id = 1
              AND (SELECT rev FROM document WHERE id = $1) IS NOT DISTINCT FROM $10::bigint RETURNING seq),
        i AS (
            INSERT INTO \(PostgresDocumentStore.documentColumns)
            SELECT $1, $2, $3, $4, c.seq, $5, $6, $7, $8, $9 FROM c
            \(PostgresDocumentStore.replacingRow)
            WHERE document.rev IS NOT DISTINCT FROM $10::bigint
            RETURNING seq)
        SELECT seq, pg_notify('docsync_changes', seq::text)::text FROM i
        """
    typealias Row = Int64
    static var bindingDataTypes: [PostgresDataType] { [.text, .text, .text, .int8, .int8, .int8, .int8, .int8, .text, .int8] }

    let version: StoreRules.Version
    let existing: Int64?
    let now: Int64
    let storedAt: Int64
    let writer: String?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 10)
        bindings.append(version.id)
        bindings.append(version.docType)
        bindings.append(version.body)
        bindings.append(version.rev)
        bindings.append(version.updatedAt)
        bindings.append(version.deletedAt)
        bindings.append(now)
        bindings.append(storedAt)
        bindings.append(writer)
        bindings.append(existing)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((Int64, String?).self).0 }
}
