import GRDB
import GRDBSQLite

/// A statement bound, stepped and read through SQLite's C API.
///
/// GRDB's `execute(arguments:)` boxes every argument in an existential `DatabaseValue`, and
/// `Row` copies every column the same way. On the bulk paths (the three rows each file of an
/// initial import adds, the outbox entries read and acknowledged by the thousand) that boxing,
/// with the reference counting and allocation it brings, cost about three times what SQLite itself
/// did. These statements skip it: arguments go straight to `sqlite3_bind_*` and columns come
/// straight from `sqlite3_column_*`.
///
/// The statement itself still comes from GRDB (prepared and cached by it) and is always left
/// reset, so GRDB can run it again. It is only ever used inside an `Index.read` or `Index.write`
/// transaction, on GRDB's own queue.
struct RawStatement: ~Copyable {
    private let statement: Statement
    private let handle: OpaquePointer
    private let db: Database

    /// The cached statement for `sql`. Every statement here has fixed SQL (`IN` lists come in a
    /// few fixed lengths), so all of them are prepared once per connection.
    init(_ db: Database, cached sql: String) throws {
        try self.init(db, statement: db.cachedStatement(sql: sql))
    }

    /// The statement of the call site `site` (one fixed SQL text each) in this transaction: looked
    /// up in the connection's cache once, then by the site's line. The cache is keyed by the SQL
    /// text, and hashing a few hundred characters on every call showed in the bulk paths' profile.
    init(_ tx: IndexTransaction, _ sql: @autoclosure () -> String, site: Int = #line) throws {
        if let statement = tx.statements.bySite[site] {
            try self.init(tx.db, statement: statement)
        } else {
            let statement = try tx.db.cachedStatement(sql: sql())
            tx.statements.bySite[site] = statement
            try self.init(tx.db, statement: statement)
        }
    }

    private init(_ db: Database, statement: Statement) throws {
        self.db = db
        self.statement = statement
        self.handle = statement.sqliteStatement
        // Every statement here binds all of its parameters: no bindings are cleared (it freed and
        // copied each text again).
        sqlite3_reset(handle)
    }

    deinit {
        sqlite3_reset(handle)
    }

    // MARK: Arguments (1-based, as in SQL)

    func bind(_ index: Int32, _ value: String?) {
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        let count = Int32(value.utf8.count)
        value.withCString { text in
            // SQLITE_TRANSIENT: SQLite copies the text, which only lives as long as this closure.
            _ = sqlite3_bind_text(handle, index, text, count, Self.transient)
        }
    }

    func bind(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    func bind(_ index: Int32, _ value: Int) {
        sqlite3_bind_int64(handle, index, Int64(value))
    }

    func bind(_ index: Int32, _ value: Bool) {
        sqlite3_bind_int64(handle, index, value ? 1 : 0)
    }

    private static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
    }

    // MARK: Execution

    /// Advances to the next row; false once there is none.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code:
            let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws {
        while try step() {}
    }

    // MARK: Columns (0-based, as SQLite numbers them)

    func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The UTF-8 bytes of a text column (`nil` for NULL), valid only inside `body`: read without
    /// making a string of them first.
    func withUTF8<R>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let bytes = sqlite3_column_text(handle, column) else { return body(nil) }
        return body(UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column))))
    }

    /// A NOT NULL text column.
    func string(_ column: Int32) -> String { text(column) ?? "" }

    func int64(_ column: Int32) -> Int64? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column)
    }

    func bool(_ column: Int32) -> Bool { sqlite3_column_int64(handle, column) != 0 }
}

/// The statements one transaction has used, by the line that uses them (see `RawStatement`).
/// Only `IndexTransaction.swift` uses sites, so a line names one SQL text.
final class StatementMemo {
    var bySite: [Int: Statement] = [:]
}

/// A value bound straight into a `RawStatement` (no boxing): what `IN` lists are made of.
protocol RawBindable {
    func bind(to statement: borrowing RawStatement, at index: Int32)
}

extension String: RawBindable {
    func bind(to statement: borrowing RawStatement, at index: Int32) { statement.bind(index, self) }
}

extension Int64: RawBindable {
    func bind(to statement: borrowing RawStatement, at index: Int32) { statement.bind(index, self) }
}
