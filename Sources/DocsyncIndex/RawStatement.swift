import DocsyncSQL
import GRDB

extension RawStatement {
    /// The statement of the call site `site` (one fixed SQL text each) in this transaction: looked
    /// up in the connection's cache once, then by the site's line. The cache is keyed by the SQL
    /// text, and hashing a few hundred characters on every call is a cost the bulk paths need not pay.
    init(_ tx: IndexTransaction, _ sql: @autoclosure () -> String, site: Int = #line) throws {
        if let statement = tx.statements.bySite[site] {
            try self.init(tx.db, statement: statement)
        } else {
            let statement = try tx.db.cachedStatement(sql: sql())
            tx.statements.bySite[site] = statement
            try self.init(tx.db, statement: statement)
        }
    }
}

/// The statements one transaction has used, by the line that uses them (see `RawStatement`).
/// Only `IndexTransaction.swift` uses sites, so a line names one SQL text.
final class StatementMemo {
    var bySite: [Int: Statement] = [:]
}
