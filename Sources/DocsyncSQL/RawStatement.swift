import GRDB
import GRDBSQLite

/// A statement bound, stepped and read through SQLite's C API.
///
/// GRDB's `execute(arguments:)` boxes every argument in an existential `DatabaseValue`, and
/// `Row` copies every column the same way. On the bulk paths (the rows each file of an initial
/// import adds to the agent's index, the outbox entries read and acknowledged by the thousand, the
/// documents a batch call stores on the server) that boxing, with the reference counting and
/// allocation it brings, cost about three times what SQLite itself did. These statements skip
/// it: arguments go straight to `sqlite3_bind_*` and columns come straight from `sqlite3_column_*`.
///
/// The statement itself still comes from GRDB (prepared and cached by it) and is always left
/// reset, so GRDB can run it again. It is only ever used inside a GRDB read or write, on GRDB's
/// own queue. The small methods are inlinable: they are called per column of every row.
public struct RawStatement: ~Copyable {
    @usableFromInline let statement: Statement
    @usableFromInline let handle: OpaquePointer
    @usableFromInline let db: Database

    /// The connection's cached statement for `sql`.
    public init(_ db: Database, cached sql: String) throws {
        try self.init(db, statement: db.cachedStatement(sql: sql))
    }

    public init(_ db: Database, statement: Statement) throws {
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

    @inlinable
    public func bind(_ index: Int32, _ value: String?) {
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

    @inlinable
    public func bind(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    @inlinable
    public func bind(_ index: Int32, _ value: Int) {
        sqlite3_bind_int64(handle, index, Int64(value))
    }

    @inlinable
    public func bind(_ index: Int32, _ value: Bool) {
        sqlite3_bind_int64(handle, index, value ? 1 : 0)
    }

    @usableFromInline static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
    }

    // MARK: Execution

    /// Advances to the next row; false once there is none.
    @inlinable
    public func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw failure(code)
        }
    }

    @usableFromInline func failure(_ code: Int32) -> DatabaseError {
        let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }

    /// Runs a statement that returns no rows.
    @inlinable
    public func run() throws {
        while try step() {}
    }

    // MARK: Columns (0-based, as SQLite numbers them)

    @inlinable
    public func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The UTF-8 bytes of a text column (`nil` for NULL), valid only inside `body`: read without
    /// making a string of them first.
    @inlinable
    public func withUTF8<R>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let bytes = sqlite3_column_text(handle, column) else { return body(nil) }
        return body(UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column))))
    }

    /// A NOT NULL text column.
    @inlinable
    public func string(_ column: Int32) -> String { text(column) ?? "" }

    @inlinable
    public func int64(_ column: Int32) -> Int64? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column)
    }

    @inlinable
    public func bool(_ column: Int32) -> Bool { sqlite3_column_int64(handle, column) != 0 }
}

/// A value bound straight into a `RawStatement` (no boxing): what `IN` lists are made of.
public protocol RawBindable {
    func bind(to statement: borrowing RawStatement, at index: Int32)
}

extension String: RawBindable {
    @inlinable
    public func bind(to statement: borrowing RawStatement, at index: Int32) { statement.bind(index, self) }
}

extension Int64: RawBindable {
    @inlinable
    public func bind(to statement: borrowing RawStatement, at index: Int32) { statement.bind(index, self) }
}
