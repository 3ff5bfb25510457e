import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import GRDB

/// What an import's index costs, apart from everything else the agent does (issue 61, item 1),
/// beside the agent's whole import of the same documents in the same run: the CPU a document
/// takes to be recorded as the agent records it (file row, document row and body, outbox entry;
/// then the acknowledgement's removal and update, 512 and 500 at a time), to be recorded in the
/// fewest rows an import could keep (one row a document holding its file, body and a pending
/// flag, found by id and by path; the acknowledgement one update), and to be parsed and hashed.
/// The agent's CPU less its index plus the fewest rows is the least an agent keeping the import's
/// promises could cost with everything else it does unchanged.
struct IndexFloorRun {
    var documents = 0
    /// CPU seconds per round: the agent's whole import (its process), the agent's index, the
    /// one-row index, parsing and hashing (this process).
    var agent: [Double] = []
    var today: [Double] = []
    var oneRow: [Double] = []
    var parse: [Double] = []

    func perDocument(_ seconds: [Double]) -> Double { percentile(seconds, 50) / Double(documents) * 1e6 }

    var table: String {
        let floor = perDocument(agent) - perDocument(today) + perDocument(oneRow)
        return """
            ## index floor: \(documents) documents of about 1 KiB, median of \(today.count) rounds (CPU, µs a document)

            | part of an import | µs a document |
            |---|---:|
            | the agent's whole import (`watch` until the server holds every document; its process) | \(fmt(perDocument(agent), 1)) |
            | its index alone: file, document, body, outbox entry; the acknowledgement | \(fmt(perDocument(today), 1)) |
            | the fewest rows an import could keep (one row, a pending flag; one update) | \(fmt(perDocument(oneRow), 1)) |
            | parsing each file and hashing it (id and docType found, content hashed) | \(fmt(perDocument(parse), 1)) |

            With the fewest rows and all else unchanged the agent would cost \(fmt(floor, 1)) µs a document: \(fmt(floor / perDocument(agent), 2))× of today.
            """
    }
}

extension Bench {
    func measureIndexFloor(count: Int, work: TempFolder) async throws -> IndexFloorRun {
        let bodies = (0..<count).map { i in
            Array(#"{"id":"d\#(i)","docType":"bench","title":"Document \#(i)","n":\#(i),"tags":["a","b"],"body":"\#(String(repeating: "lorem ipsum dolor sit amet ", count: 34))"}"#.utf8)
        }
        let docsDir = work.file("floor-docs")
        for (i, body) in bodies.enumerated() {
            let dir = "\(docsDir)/import/g\(i / 100)"
            if i % 100 == 0 { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
            try Data(body).write(to: URL(fileURLWithPath: "\(dir)/d\(i).json"))
        }
        var bench = self
        bench.docs = count
        var run = IndexFloorRun(documents: count)
        for round in 0..<rounds {
            run.agent.append(try await bench.agentImportCPU(docsDir: docsDir, work: work, name: "floor-\(round)"))
            run.today.append(try Self.cpu { try Self.recordAsTheAgentDoes(bodies, path: work.file("today-\(round).sqlite")) })
            run.oneRow.append(try Self.cpu { try Self.recordInOneRow(bodies, path: work.file("one-row-\(round).sqlite")) })
            run.parse.append(try Self.cpu { try Self.parseAndHash(bodies) })
        }
        return run
    }

    /// The agent's CPU importing `docsDir` into an empty server; its state is removed after.
    func agentImportCPU(docsDir: String, work: TempFolder, name: String) async throws -> Double {
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let (round, agent) = try await measureImport(docsDir: docsDir, server: server, api: api, work: work, name: "watch-\(name)")
        agent.signal(SIGKILL)
        try? FileManager.default.removeItem(atPath: docsDir + "/.docsync")
        return round.agentCPU
    }

    static func cpu(_ body: () throws -> Void) throws -> Double {
        let before = ownCPUSeconds()
        try body()
        return ownCPUSeconds() - before
    }

    /// The agent's own index calls for an import: the scan's chunk of 512 in a transaction, then
    /// the pusher's rounds of 500 read in order and acknowledged as stored as sent.
    static func recordAsTheAgentDoes(_ bodies: [[UInt8]], path: String) throws {
        let index = try Index(path: path)
        for start in stride(from: 0, to: bodies.count, by: 512) {
            try index.writeSync { tx in
                for i in start..<min(start + 512, bodies.count) {
                    let (id, text) = ("d\(i)", String(decoding: bodies[i], as: UTF8.self))
                    let hash = ContentHash.sha256Hex(bodies[i])
                    let stat = FileStat(size: Int64(bodies[i].count), mtimeNs: 1_700_000_000_000_000_000 + Int64(i), inode: UInt64(i + 1))
                    try tx.upsertFile(FileRow(path: "import/g\(i / 100)/d\(i).json", docID: id, docType: "bench", hash: hash, stat: stat, state: .ok, error: nil))
                    try tx.upsertDocument(DocumentRow(id: id, docType: "bench", path: "import/g\(i / 100)/d\(i).json", body: text, bodyHash: hash))
                    try tx.enqueue(key: .document(id), docID: id, kind: .put, payload: nil, bodyHash: hash, queuedAt: Int64(i))
                }
            }
        }
        var after: Int64 = 0
        while true {
            let due = try index.readSync { try $0.dueEntries(now: .max, limit: 500, after: after) }
            guard let last = due.last else { break }
            after = last.seq
            try index.writeSync { tx in
                for (n, entry) in due.enumerated() {
                    let current = try tx.removeEntry(entry)
                    try tx.recordAcknowledged(
                        id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: Int64(n + 1), ifBodyHash: entry.documentHash,
                        current: current)
                }
            }
        }
    }

    /// The fewest rows: one per document, its file's stat and its body in it, a partial index of
    /// the pending ones (what a pusher reads), the same pragmas as the agent's index.
    static func recordInOneRow(_ bodies: [[UInt8]], path: String) throws {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA page_size = 8192")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let pool = try DatabasePool(path: path, configuration: config)
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE doc (
                    id TEXT NOT NULL UNIQUE, path TEXT NOT NULL UNIQUE, doc_type TEXT NOT NULL, hash TEXT NOT NULL,
                    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, body TEXT NOT NULL,
                    updated_at INTEGER, server_rev INTEGER, pending INTEGER NOT NULL);
                CREATE INDEX doc_pending ON doc(pending) WHERE pending > 0;
                """)
        }
        for start in stride(from: 0, to: bodies.count, by: 512) {
            try pool.write { db in
                let insert = try db.cachedStatement(sql: "INSERT INTO doc VALUES (?, ?, 'bench', ?, ?, ?, ?, ?, ?, NULL, ?)")
                for i in start..<min(start + 512, bodies.count) {
                    let args: StatementArguments = [
                        "d\(i)", "import/g\(i / 100)/d\(i).json", ContentHash.sha256Hex(bodies[i]), bodies[i].count,
                        1_700_000_000_000_000_000 + Int64(i), i + 1, String(decoding: bodies[i], as: UTF8.self), i, i + 1,
                    ]
                    try insert.execute(arguments: args)
                }
            }
        }
        var after: Int64 = 0
        while true {
            let due = try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT rowid, pending, body FROM doc WHERE pending > 0 AND pending > ? ORDER BY pending LIMIT 500", arguments: [after])
            }
            guard let last = due.last else { break }
            after = last[1]
            try pool.write { db in
                let ack = try db.cachedStatement(sql: "UPDATE doc SET server_rev = ?, pending = 0 WHERE rowid = ? AND pending = ?")
                for (n, row) in due.enumerated() { try ack.execute(arguments: [n + 1, row[0] as Int64, row[1] as Int64]) }
            }
        }
    }

    /// What the import must do with each file's bytes whatever it keeps: parse it (its id and
    /// docType are in it) and hash it.
    static func parseAndHash(_ bodies: [[UInt8]]) throws {
        var found = 0
        for bytes in bodies {
            let object = try DocumentRules.parseObject(bytes, maxSize: Int.max)
            if object["id"] != nil, !ContentHash.sha256Hex(bytes).isEmpty { found += 1 }
        }
        guard found == bodies.count else { throw ProcessFailure("parsed \(found) of \(bodies.count)") }
    }
}
