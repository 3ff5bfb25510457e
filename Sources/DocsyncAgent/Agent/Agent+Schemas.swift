import DocsyncFiles
import DocsyncSchema
import DocsyncWatcher

/// Schemas in the agent's runs: read before the documents they judge, refreshed when they change.
extension Agent {
    /// The full scan of a start (or a one-shot sync), the `schema` folder first: its schemas are
    /// recorded and loaded before any other file is judged, so an import is checked against them
    /// (a schema kept elsewhere applies from the moment it is recorded).
    func fullScanSchemasFirst() async throws -> ScanSummary {
        let (scanner, schemaCheck, root) = (self.scanner, self.schemaCheck, options.root)
        let summary = try await writer.locked {
            if FileSystem.info(root + "/" + DocTypeSchemas.docType)?.kind == .directory {
                _ = try await scanner.scan(ChangeBatch(paths: [DocTypeSchemas.docType]))
            }
            try await schemaCheck.refresh()
            return try await scanner.fullScan()
        }
        if summary.schemasChanged { try await schemaCheck.refresh() }
        return summary
    }

    /// The schemas refreshed after a schema document changed (saved, deleted or pulled), as a
    /// worker's round; held saves marked for another look go to the stat settler.
    func schemaRound() async -> WorkerOutcome {
        do {
            if try await schemaCheck.refresh() > 0 { wakeSettler() }
            return .idle(nil)
        } catch {
            return .failed(error)
        }
    }
}
