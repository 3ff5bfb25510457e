import DocsyncSQL
import GRDB

extension RawStatement {
    /// The statement of the call site (one fixed SQL text each) in this transaction: looked up in
    /// the connection's cache once, then by the site. The cache is keyed by the SQL text, and
    /// hashing a few hundred characters on every call is a cost the bulk paths need not pay.
    init(_ tx: IndexTransaction, _ sql: @autoclosure () -> String, file: StaticString = #fileID, line: Int = #line) throws {
        let site = StatementSite(file: file, line: line)
        if let statement = tx.statements.bySite[site] {
            try self.init(tx.db, statement: statement)
        } else {
            let statement = try tx.db.cachedStatement(sql: sql())
            tx.statements.bySite[site] = statement
            try self.init(tx.db, statement: statement)
        }
    }
}

/// Where a statement is used: its file and line. Both, because two files can use a statement on
/// the same line number; the file is compared by its literal's address, which names one file.
struct StatementSite: Hashable {
    let file: UInt
    let line: Int

    init(file: StaticString, line: Int) {
        self.file = UInt(bitPattern: file.utf8Start)
        self.line = line
    }
}

/// The statements one transaction has used, by the site that uses them (see `RawStatement`).
final class StatementMemo {
    var bySite: [StatementSite: Statement] = [:]
}
