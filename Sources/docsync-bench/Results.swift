import DocsyncClock
import DocsyncTestSupport
import Foundation

/// One round of the initial import, and the raw batched ingest measured next to it.
struct ImportRound {
    var importSeconds = 0.0
    var importDocsPerSecond = 0.0
    var agentCPU = 0.0
    var serverCPU = 0.0
    var agentRSS = 0
    var rawBatchDocsPerSecond = 0.0
    /// The raw importer's rate and CPU in the same round (see `Bench+RawImport`).
    var rawImportDocsPerSecond = Double.nan
    var rawImportCPU = Double.nan
    /// docsync's import rate over the raw ingest's in the same round.
    var ratio: Double { importDocsPerSecond / rawBatchDocsPerSecond }
    /// docsync's import rate over the raw importer's in the same round.
    var importerRatio: Double { importDocsPerSecond / rawImportDocsPerSecond }
}

/// One round of the pull: the agent's `watch` into an empty folder, and the raw pull beside it.
struct PullRound {
    var agentSeconds = 0.0
    var agentCPU = 0.0
    var agentRSS = 0
    var rawDocsPerSecond = 0.0
}

/// One run's figures, printed as Markdown and optionally written as JSON.
struct Results {
    var machine = ""
    /// The import rounds, in order; the table shows their medians (and the highest peak RSS).
    var rounds: [ImportRound] = []
    var importSeconds: Double { median(\.importSeconds) }
    var importRate: Double { median(\.importDocsPerSecond) }
    var agentCPU: Double { median(\.agentCPU) }
    var serverCPU: Double { median(\.serverCPU) }
    var agentRSS: Int { rounds.map(\.agentRSS).max() ?? 0 }
    var rawBatchDocsPerSecond: Double { median(\.rawBatchDocsPerSecond) }
    /// The median of each round's ratio: a round's import and raw ingest ran minutes apart at most.
    var rawBatchRatio: Double { median(\.ratio) }
    var rawImportDocsPerSecond: Double { median(\.rawImportDocsPerSecond) }
    var rawImportCPU: Double { median(\.rawImportCPU) }
    var rawImporterRatio: Double { median(\.importerRatio) }
    var latency: [Double] = []
    /// The pull rounds, in order; the table shows their medians (and the highest peak RSS).
    var pullRounds: [PullRound] = []
    var pullSeconds: Double { percentile(pullRounds.map(\.agentSeconds), 50) }
    var pullAgentCPU: Double { percentile(pullRounds.map(\.agentCPU), 50) }
    var pullAgentRSS: Int { pullRounds.map(\.agentRSS).max() ?? 0 }
    var rawPullDocsPerSecond: Double { percentile(pullRounds.map(\.rawDocsPerSecond), 50) }
    /// The median of each round's ratio (the agent's pull against the raw pull beside it).
    func pullRatio(docs: Int) -> Double { percentile(pullRounds.map { Double(docs) / $0.agentSeconds / $0.rawDocsPerSecond }, 50) }
    /// The same pull into a git work tree with `--git-commit`, until every change is committed.
    var gitPullSeconds = 0.0
    var gitCommits = 0
    /// A trickle into 4c's repository: CPU (agent and git) a commit, ms; git's own share; and
    /// git's floor for one changed file in that folder (`update-index` + `write-tree`), ms.
    var gitTrickleCPUms = Double.nan
    var gitTrickleGitCPUms = Double.nan
    /// The same trickle pulled by 4b's agent, without git history: its CPU a change, ms.
    var plainTrickleCPUms = Double.nan
    var gitFloorMs = Double.nan
    var rescanSeconds = 0.0
    var rescanContentBytes = 0
    var rescanReadBytes = 0
    var idleCPUmsPerMinute = 0.0
    var idleWakeupsPerMinute = 0.0
    var idleMetricsCPUmsPerMinute = 0.0
    var idleListeningCPUmsPerMinute = 0.0
    var rawDocsPerSecond = 0.0
    var baselineImportDocsPerSecond = 0.0
    var baselineLatency: [Double] = []
    var clock = ClockComparison()
    var attachmentSeconds = 0.0
    var attachmentBytes = 0
    var attachmentAgentRSS = 0
    var curlAttachmentSeconds = 0.0
    var downloadSeconds = 0.0
    var downloadAgentRSS = 0
    var curlDownloadSeconds = 0.0
    var curlDownloadOnlySeconds = 0.0
    /// The peak of the attachment run's own server.
    var serverRSS = 0
    var postgresLoad = LoadRun()
    var sqliteLoad = LoadRun()
    /// The raw batched ingest of as many documents, split over the 2 PostgreSQL servers, and
    /// through the one SQLite server.
    var postgresBatchDocsPerSecond = Double.nan
    var sqliteBatchDocsPerSecond = Double.nan
    var postgresAgents = AgentsLoad.Outcome()
    var sqliteAgents = AgentsLoad.Outcome()
    var kintoImportDocsPerSecond = Double.nan
    var kintoRawDocsPerSecond = Double.nan
    var selective = SelectiveRun()
    var busy = BusyRun()

    func median(_ value: (ImportRound) -> Double) -> Double { percentile(rounds.map(value), 50) }

    static func describeMachine() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?.split(separator: ":").last?
            .trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let memory = ProcessInfo.processInfo.physicalMemory / (1 << 30)
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), \(memory) GiB"
    }

    func markdown(docs: Int, saves: Int, rate: Int, idleSeconds: Int, baselineDocs: Int) -> String {
        let of = rounds.count > 1 ? "median of \(rounds.count) rounds" : "one round"
        func ms(_ v: [Double], _ p: Double) -> String { fmt(percentile(v, p)) }
        let maxLatency = latency.max() ?? .nan
        let baseMax = baselineLatency.max() ?? .nan
        return """
            ## docsync benchmark

            Machine: \(machine). Loopback, release build, one run; the import and the raw batched ingest: \(of).

            | measure | docsync | inotifywait + curl | docsync / curl loop |
            |---|---:|---:|---:|
            | initial import, docs/s (\(docs) docs of ~1 KiB; curl loop on \(baselineDocs)) | \(fmt(importRate, 0)) | \(fmt(baselineImportDocsPerSecond, 0)) | \(fmt(importRate / baselineImportDocsPerSecond))× |
            | server raw ingest, docs/s: batches of 500 through `/api/sync`, 4 in flight (docsync / raw) | \(fmt(rawBatchDocsPerSecond, 0)) | | \(fmt(rawBatchRatio, 2))× |
            | server raw ingest, docs/s: single `PUT /api/document`, 16 in flight (docsync / raw) | \(fmt(rawDocsPerSecond, 0)) | | \(fmt(importRate / rawDocsPerSecond, 2))× |
            | raw importer, docs/s: the same files read and posted in batches of 500, 4 in flight (docsync / raw importer; its CPU \(fmt(rawImportCPU, 2)) s) | \(fmt(rawImportDocsPerSecond, 0)) | | \(fmt(rawImporterRatio, 2))× |
            | initial import, seconds | \(fmt(importSeconds, 2)) | | |
            | import CPU seconds, agent / server | \(fmt(agentCPU, 2)) / \(fmt(serverCPU, 2)) | | |
            | import CPU, µs a document: agent / server / raw importer | \(fmt(agentCPU / Double(docs) * 1e6, 1)) / \(fmt(serverCPU / Double(docs) * 1e6, 1)) / \(fmt(rawImportCPU / Double(docs) * 1e6, 1)) | | |
            | agent peak RSS (the highest of the rounds) | \(agentRSS >> 20) MiB | | |
            | save → stored latency p50, ms (\(saves) saves at \(rate)/s) | \(ms(latency, 50)) | \(ms(baselineLatency, 50)) | \(fmt(percentile(latency, 50) / percentile(baselineLatency, 50), 2))× |
            | latency p90, ms | \(ms(latency, 90)) | \(ms(baselineLatency, 90)) | |
            | latency p99, ms | \(ms(latency, 99)) | \(ms(baselineLatency, 99)) | |
            | latency max, ms | \(fmt(maxLatency)) | \(fmt(baseMax)) | |
            | restart rescan of \(docs) unchanged files, s | \(fmt(rescanSeconds, 3)) | | |
            | rescan: document bytes read / all bytes read (rchar) | \(rescanContentBytes) / \(rescanReadBytes) | | |
            | pull into an empty folder, docs/s (\(docs) docs; raw: the same pages fetched in-process and written as files) | \(fmt(Double(docs) / pullSeconds, 0)) | | |
            | raw pull, docs/s (docsync / raw\(pullRounds.count > 1 ? ": the median of the rounds' ratios" : "")) | \(fmt(rawPullDocsPerSecond, 0)) | | \(fmt(pullRatio(docs: docs), 2))× |
            | pull: agent CPU seconds / peak RSS | \(fmt(pullAgentCPU, 2)) / \(pullAgentRSS >> 20) MiB | | |
            | pull with `--git-commit`, docs/s until all committed (\(gitCommits) commits; against the pull alone; time with / without) | \(fmt(Double(docs) / gitPullSeconds, 0)) | \(fmt(Double(docs) / pullSeconds, 0)) | \(fmt(gitPullSeconds / pullSeconds, 2))× |
            | then a trickle, one change a second: CPU of the agent and its git a commit, ms (\(docs) files in the docType's folder; git's own) | \(fmt(gitTrickleCPUms, 0)) (\(fmt(gitTrickleGitCPUms, 0))) | the same trickle without git history: \(fmt(plainTrickleCPUms, 0)); git's floor for one changed file: \(fmt(gitFloorMs, 0)) | adds \(fmt(gitTrickleCPUms - plainTrickleCPUms, 0)); git \(fmt(gitTrickleGitCPUms / gitFloorMs, 2))× its floor |
            | idle CPU, ms per minute (observed \(idleSeconds) s; per-thread schedstat) | \(fmt(idleCPUmsPerMinute, 2)) | | |
            | idle wakeups per minute | \(fmt(idleWakeupsPerMinute, 1)) | | |
            | idle CPU with `--metrics-addr` on, not scraped, ms per minute | \(fmt(idleListeningCPUmsPerMinute, 2)) | | |
            | idle CPU with `--metrics-addr`, scraped every 15 s, ms per minute | \(fmt(idleMetricsCPUmsPerMinute, 2)) | | |
            | attachment of \(attachmentBytes >> 20) MiB: file on disk → URL in the server's document, s (curl -F: the same upload alone) | \(fmt(attachmentSeconds, 2)) | \(fmt(curlAttachmentSeconds, 2)) | \(fmt(attachmentSeconds / curlAttachmentSeconds, 2))× |
            | attachment throughput, MiB/s | \(fmt(Double(attachmentBytes >> 20) / attachmentSeconds, 0)) | \(fmt(Double(attachmentBytes >> 20) / curlAttachmentSeconds, 0)) | |
            | the same file on to a second, empty folder: pulled, downloaded, flushed, placed, s (`curl -o` + `sync FILE`; curl alone \(fmt(curlDownloadOnlySeconds, 2))) | \(fmt(downloadSeconds, 2)) | \(fmt(curlDownloadSeconds, 2)) | \(fmt(downloadSeconds / curlDownloadSeconds, 2))× |
            | peak RSS while the attachment travels: sending agent / server / receiving agent (a server of its own) | \(attachmentAgentRSS >> 20) MiB / \(serverRSS >> 20) MiB / \(downloadAgentRSS >> 20) MiB | | |
            | import into Kinto, docs/s (raw: the same records through `/v1/batch`, 25 a call, 4 in flight; docsync / raw) | \(fmt(kintoImportDocsPerSecond, 0)) | raw \(fmt(kintoRawDocsPerSecond, 0)) | \(fmt(kintoImportDocsPerSecond / kintoRawDocsPerSecond, 2))× |\(loadTable())\(agentsTable())\(selectiveTable())\(busyTable())\(roundsTable(docs: docs))\(pullRoundsTable(docs: docs))

            ### Clock estimators on the same jittered samples

            \(clock.trials) trials of 16 samples; request delay 0–100 ms, reply delay 0–20 ms, server work 0–2 ms.

            | estimator | median error, ms | p95 error, ms |
            |---|---:|---:|
            | min-delay filter (docsync) | \(fmt(clock.minDelayMedian, 2)) | \(fmt(clock.minDelayP95, 2)) |
            | ServerSync EMA | \(fmt(clock.emaMedian, 2)) | \(fmt(clock.emaP95, 2)) |
            | limit: half the smallest delay seen | \(fmt(clock.limitMedian, 2)) | \(fmt(clock.limitP95, 2)) |

            EMA median error / min-delay median error: \(fmt(clock.emaMedian / clock.minDelayMedian))×
            """
    }

    /// The load runs: several servers on PostgreSQL beside one on SQLite.
    func loadTable() -> String {
        guard postgresLoad.writes > 0 else { return "" }
        func row(_ name: String, _ r: LoadRun) -> String {
            "| \(name) | \(r.servers) | \(r.writes) | \(fmt(r.writesPerSecond, 0)) | \(fmt(percentile(r.latency, 50), 2)) / \(fmt(percentile(r.latency, 99), 2)) | \(r.stored) | \(r.readersExact ? "yes" : "NO") | \(r.hotWrites): \(r.revisionsIncreasing ? "yes" : "NO") |"
        }
        return """


            ### Load: \(Bench.loadWriters) writers creating documents through the servers in turn, every tenth write also updating one of \(Bench.hotDocuments) shared documents

            | store | servers | creates | creates/s | create latency p50 / p99, ms | documents stored | every reader saw each create once | shared-document updates: revisions +1 each |
            |---|---:|---:|---:|---:|---:|---|---|
            \(row("PostgreSQL", postgresLoad))
            \(row("SQLite", sqliteLoad))

            Batched ingest (batches of 500, 4 in flight to each server), the same number of documents: PostgreSQL ×2 \(fmt(postgresBatchDocsPerSecond, 0))/s, SQLite ×1 \(fmt(sqliteBatchDocsPerSecond, 0))/s (\(fmt(postgresBatchDocsPerSecond / sqliteBatchDocsPerSecond, 2))×)
            """
    }

    /// The agents runs: many agents on two servers on PostgreSQL beside one on SQLite.
    func agentsTable() -> String {
        guard postgresAgents.agents > 0 else { return "" }
        func row(_ name: String, _ r: AgentsLoad.Outcome) -> String {
            let changes = "\(r.changesAfterImport) / \(r.serverChanges)"
            return "| \(name) | \(fmt(r.importSeconds, 1)) | \(fmt(r.editSeconds, 1)) | \(r.converged ? "yes" : "NO") | \(r.timeouts.count) | \(r.revisionsExact ? "yes" : "NO (\(r.highestRevision))") | \(changes) |"
        }
        return """


            ### Agents: \(postgresAgents.agents) agents (one `watch`, a folder each, every folder following all), \(postgresAgents.documents) documents created, then each edited once

            | store | every folder holds every document, s | every edit, s | converged | timeouts logged | every document at revision 2 | server changes after the creates / at the end |
            |---|---:|---:|---|---:|---|---|
            \(row("PostgreSQL ×2", postgresAgents))
            \(row("SQLite ×1", sqliteAgents))
            """
    }

    /// A pull of one docType beside a pull of all, from one server.
    func selectiveTable() -> String {
        let r = selective
        guard r.documents > 0 else { return "" }
        return """


            ### Selective pull: \(r.documents) documents of \(r.types) docTypes and a rare one, paged through `/api/sync` from the start

            | pull | documents | seconds | server CPU s | time / all | µs a document |
            |---|---:|---:|---:|---:|---:|
            | every type | \(r.allReceived) | \(fmt(r.allSeconds, 2)) | \(fmt(r.allServerCPU, 2)) | 1 | \(fmt(r.allSeconds / Double(r.allReceived) * 1e6)) |
            | one type (`"types": ["type3"]`: the type index) | \(r.oneReceived) | \(fmt(r.oneSeconds, 2)) | \(fmt(r.oneServerCPU, 2)) | \(fmt(r.oneSeconds / r.allSeconds, 3)) | \(fmt(r.oneSeconds / Double(r.oneReceived) * 1e6)) |
            | the same type as all but the others (the sequence filtered) | \(r.scanReceived) | \(fmt(r.scanSeconds, 2)) | \(fmt(r.scanServerCPU, 2)) | \(fmt(r.scanSeconds / r.allSeconds, 3)) | \(fmt(r.scanSeconds / Double(r.scanReceived) * 1e6)) |
            | the rare type (`"types": ["rare"]`) | \(r.rareReceived) | \(fmt(r.rareSeconds, 3)) | \(fmt(r.rareServerCPU, 2)) | \(fmt(r.rareSeconds / r.allSeconds, 4)) | \(fmt(r.rareSeconds / Double(r.rareReceived) * 1e6)) |

            Server peak RSS: \(r.serverRSS >> 20) MiB.
            """
    }

    /// Each round, when there was more than one.
    func roundsTable(docs: Int) -> String {
        guard rounds.count > 1 else { return "" }
        let rows = rounds.enumerated().map { n, r in
            "| \(n + 1) | \(fmt(r.importDocsPerSecond, 0)) | \(fmt(r.rawBatchDocsPerSecond, 0)) | \(fmt(r.ratio, 2))× | \(fmt(r.rawImportDocsPerSecond, 0)) | \(fmt(r.importerRatio, 2))× | \(fmt(r.agentCPU, 2)) / \(fmt(r.serverCPU, 2)) | \(r.agentRSS >> 20) MiB |"
        }
        return """


            ### Import rounds (\(docs) documents; each round on servers of its own)

            | round | import, docs/s | raw batched ingest, docs/s | docsync / raw | raw importer, docs/s | docsync / raw importer | CPU s, agent / server | agent peak RSS |
            |---:|---:|---:|---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))
            """
    }

    /// Each pull round, when there was more than one.
    func pullRoundsTable(docs: Int) -> String {
        guard pullRounds.count > 1 else { return "" }
        let rows = pullRounds.enumerated().map { n, r in
            "| \(n + 1) | \(n % 2 == 0 ? "agent" : "raw") | \(fmt(Double(docs) / r.agentSeconds, 0)) | \(fmt(r.rawDocsPerSecond, 0)) | "
                + "\(fmt(Double(docs) / r.agentSeconds / r.rawDocsPerSecond, 2))× | \(fmt(r.agentCPU, 2)) | \(r.agentRSS >> 20) MiB |"
        }
        return """


            ### Pull rounds (\(docs) documents into an empty folder each; the agent and the raw pull in alternating order)

            | round | first | agent, docs/s | raw, docs/s | docsync / raw | agent CPU s | agent peak RSS |
            |---:|---|---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))
            """
    }

    func json(docs: Int) -> String {
        let values: [(String, Double)] = [
            ("docs", Double(docs)), ("import_seconds", importSeconds), ("import_docs_per_s", importRate), ("import_rounds", Double(rounds.count)), ("raw_batch_ratio", rawBatchRatio),
            ("agent_cpu_s", agentCPU), ("server_cpu_s", serverCPU), ("agent_peak_rss_bytes", Double(agentRSS)),
            ("latency_p50_ms", percentile(latency, 50)), ("latency_p90_ms", percentile(latency, 90)),
            ("latency_p99_ms", percentile(latency, 99)), ("latency_max_ms", latency.max() ?? .nan),
            ("rescan_s", rescanSeconds), ("rescan_document_bytes", Double(rescanContentBytes)), ("rescan_rchar_bytes", Double(rescanReadBytes)),
            ("pull_seconds", pullSeconds), ("pull_docs_per_s", Double(docs) / pullSeconds), ("pull_agent_cpu_s", pullAgentCPU),
            ("pull_agent_peak_rss_bytes", Double(pullAgentRSS)), ("raw_pull_docs_per_s", rawPullDocsPerSecond), ("pull_ratio", pullRatio(docs: docs)),
            ("pull_rounds", Double(pullRounds.count)),
            ("git_pull_seconds", gitPullSeconds), ("git_commits", Double(gitCommits)),
            ("git_trickle_cpu_ms", gitTrickleCPUms), ("plain_trickle_cpu_ms", plainTrickleCPUms), ("git_trickle_git_cpu_ms", gitTrickleGitCPUms), ("git_floor_ms", gitFloorMs),
            ("idle_cpu_ms_per_min", idleCPUmsPerMinute), ("idle_wakeups_per_min", idleWakeupsPerMinute),
            ("idle_metrics_cpu_ms_per_min", idleMetricsCPUmsPerMinute),
            ("idle_listening_cpu_ms_per_min", idleListeningCPUmsPerMinute),
            ("raw_ingest_docs_per_s", rawDocsPerSecond), ("raw_batch_ingest_docs_per_s", rawBatchDocsPerSecond), ("curl_loop_import_docs_per_s", baselineImportDocsPerSecond),
            ("curl_loop_latency_p50_ms", percentile(baselineLatency, 50)), ("curl_loop_latency_p99_ms", percentile(baselineLatency, 99)),
            ("clock_min_delay_median_ms", clock.minDelayMedian), ("clock_min_delay_p95_ms", clock.minDelayP95),
            ("attachment_bytes", Double(attachmentBytes)), ("attachment_s", attachmentSeconds), ("curl_attachment_s", curlAttachmentSeconds),
            ("attachment_agent_peak_rss_bytes", Double(attachmentAgentRSS)), ("server_peak_rss_bytes", Double(serverRSS)),
            ("download_s", downloadSeconds), ("curl_download_s", curlDownloadSeconds), ("curl_download_unflushed_s", curlDownloadOnlySeconds), ("download_agent_peak_rss_bytes", Double(downloadAgentRSS)),
            ("pg_2_servers_writes_per_s", postgresLoad.writesPerSecond), ("pg_2_servers_latency_p99_ms", percentile(postgresLoad.latency, 99)),
            ("sqlite_1_server_writes_per_s", sqliteLoad.writesPerSecond), ("sqlite_1_server_latency_p99_ms", percentile(sqliteLoad.latency, 99)),
            ("pg_2_servers_batch_docs_per_s", postgresBatchDocsPerSecond), ("sqlite_1_server_batch_docs_per_s", sqliteBatchDocsPerSecond),
            ("selective_all_s", selective.allSeconds), ("selective_one_type_s", selective.oneSeconds),
            ("selective_one_type_filtered_sequence_s", selective.scanSeconds), ("selective_rare_type_s", selective.rareSeconds),
            ("kinto_import_docs_per_s", kintoImportDocsPerSecond), ("kinto_raw_batch_docs_per_s", kintoRawDocsPerSecond),
            ("clock_ema_median_ms", clock.emaMedian), ("clock_ema_p95_ms", clock.emaP95), ("clock_limit_median_ms", clock.limitMedian),
        ]
        func number(_ v: Double) -> String { v.isFinite ? String(v) : "null" }
        let body = values.map { "  \"\($0.0)\": \(number($0.1))" }.joined(separator: ",\n")
        let perRound = rounds.map { r in
            "{\"import_docs_per_s\": \(number(r.importDocsPerSecond)), \"raw_batch_ingest_docs_per_s\": \(number(r.rawBatchDocsPerSecond)), "
                + "\"agent_cpu_s\": \(number(r.agentCPU)), \"server_cpu_s\": \(number(r.serverCPU)), \"agent_peak_rss_bytes\": \(r.agentRSS)}"
        }
        return "{\n  \"machine\": \"\(machine)\",\n\(body),\n  \"rounds\": [\(perRound.joined(separator: ", "))]\n}\n"
    }
}

/// ServerSync's EMA against the min-delay filter on identical simulated samples.
struct ClockComparison {
    var trials = 0
    var minDelayMedian = 0.0, minDelayP95 = 0.0
    var emaMedian = 0.0, emaP95 = 0.0
    var limitMedian = 0.0, limitP95 = 0.0

    static func run(trials: Int) -> ClockComparison {
        var rng = SystemRandomNumberGenerator()
        var filterErrors: [Double] = [], emaErrors: [Double] = [], limits: [Double] = []
        let ms: Int64 = 1_000_000
        for _ in 0..<trials {
            let truth = Int64.random(in: -3_600_000 * ms...3_600_000 * ms, using: &rng)
            var filter = MinDelayFilter()
            var ema = EMAEstimator()
            var t: Int64 = 0
            var smallest = Int64.max
            for _ in 0..<16 {
                let request = Int64.random(in: 0...100 * ms, using: &rng), reply = Int64.random(in: 0...20 * ms, using: &rng)
                let work = Int64.random(in: 0...2 * ms, using: &rng)
                let s = ClockSample(sentAt: t, receivedAt: t + request + work + reply, serverUTC: t + request + work + truth, serverDuration: work)
                filter.add(s)
                ema.add(s)
                smallest = min(smallest, s.delay)
                t = s.receivedAt + Int64.random(in: 0...50 * ms, using: &rng)
            }
            filterErrors.append(Double(abs(filter.estimate(at: t)!.offset - truth)) / 1e6)
            emaErrors.append(Double(abs(ema.estimate(at: t)!.offset - truth)) / 1e6)
            limits.append(Double(smallest) / 2e6)
        }
        return ClockComparison(
            trials: trials,
            minDelayMedian: percentile(filterErrors, 50), minDelayP95: percentile(filterErrors, 95),
            emaMedian: percentile(emaErrors, 50), emaP95: percentile(emaErrors, 95),
            limitMedian: percentile(limits, 50), limitP95: percentile(limits, 95))
    }
}
