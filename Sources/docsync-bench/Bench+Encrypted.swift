import DocsyncTestSupport
import Foundation

/// `--encrypted N`: the price of end-to-end encryption. The same steps in clear and sealed, rounds
/// alternating which goes first, each on an empty `docsync serve` of its own: `docsync sync` of N
/// documents (an import), `sync` into an empty folder (a pull), then one attachment of
/// `--attachment-mib` up (`sync`) and down (`sync` into another folder). The sealed steps include
/// what a user pays: the key derived at each start (scrypt at the default cost).
struct EncryptedRun {
    struct Step {
        var seconds: Double
        var peakRSSBytes: Int
    }

    var documents = 0
    var attachmentMiB = 0
    /// Per round, per step name: in clear, then sealed.
    var clear: [[String: Step]] = []
    var sealed: [[String: Step]] = []
    static let steps = ["import", "pull", "upload", "download"]

    var table: String {
        func median(_ rounds: [[String: Step]], _ name: String, _ key: KeyPath<Step, Double>) -> Double {
            percentile(rounds.compactMap { $0[name]?[keyPath: key] }, 50)
        }
        let rows = Self.steps.map { name in
            let (c, s) = (median(clear, name, \.seconds), median(sealed, name, \.seconds))
            let rss = { (rounds: [[String: Step]]) in rounds.compactMap { $0[name]?.peakRSSBytes }.max() ?? 0 }
            return "| \(name) | \(fmt(c, 2)) | \(fmt(s, 2)) | \(fmt(s / c, 2))× | \(rss(clear) >> 20) | \(rss(sealed) >> 20) |"
        }
        return """
            ## encrypted run: \(documents) documents imported and pulled, one \(attachmentMiB) MiB attachment up and down (\(clear.count) rounds, medians)

            | step | in clear, s | sealed, s | sealed / clear (time) | peak RSS in clear, MiB | peak RSS sealed, MiB |
            |---|---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))
            """
    }
}

extension Bench {
    func measureEncrypted(count: Int, work: TempFolder) async throws -> EncryptedRun {
        let mib = attachmentMiB ?? 256
        var run = EncryptedRun(documents: count, attachmentMiB: mib)
        let docsDir = work.file("enc-docs")
        log("encrypted run: generating \(count) documents and a \(mib) MiB file")
        for i in 0..<count { try write(document(i, prefix: "d", type: "bench"), to: "\(docsDir)/import/g\(i / 100)/d\(i).json") }
        try work.write("enc-attach/files/a.json", #"{"id":"big","docType":"files","file":{"$file":"big.bin"}}"#)
        _ = try work.writeRandom("enc-attach/files/big.bin", size: mib << 20, seed: 11)
        try work.write("passphrase", "correct horse battery staple\n")
        sync()
        for round in 0..<rounds {
            for sealed in round % 2 == 0 ? [false, true] : [true, false] {
                let steps = try await encryptedRound(sealed: sealed, docsDir: docsDir, work: work)
                if sealed { run.sealed.append(steps) } else { run.clear.append(steps) }
                let line = EncryptedRun.steps.map { "\($0) \(fmt(steps[$0]?.seconds ?? 0, 2)) s" }.joined(separator: ", ")
                log("encrypted run, round \(round + 1), \(sealed ? "sealed" : "in clear"): \(line)")
            }
        }
        return run
    }

    /// One round's four steps on an empty server of its own; the folders start without an index.
    private func encryptedRound(sealed: Bool, docsDir: String, work: TempFolder) async throws -> [String: EncryptedRun.Step] {
        let name = "serve-enc"
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let folders = ["enc-seed", "enc-pulled", "enc-attach-pulled"].map(work.file)
        for path in folders + [docsDir + "/.docsync", work.file("enc-attach/.docsync")] { try? FileManager.default.removeItem(atPath: path) }
        for path in folders { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        var options = ["--endpoint", api.baseURL, "--token-file", work.file("token")]
        if sealed {
            let made = try ChildRun.run(DocsyncProcess.binary, ["encrypt", "init", folders[0], "--passphrase-file", work.file("passphrase")] + options, log: work.file("enc-init.log"))
            guard made.exitStatus == 0 else { throw ProcessFailure("encrypt init exited \(made.exitStatus): \(made.output.suffix(2000))") }
            options += ["--passphrase-file", work.file("passphrase")]
        }
        var steps: [String: EncryptedRun.Step] = [:]
        for (step, folder) in zip(EncryptedRun.steps, [docsDir, folders[1], work.file("enc-attach"), folders[2]]) {
            // The attachment's folders sync its docType alone: else they pull the 100,000
            // documents too (and the next round's first scan finds them all in the folder).
            let types = step == "upload" || step == "download" ? ["--types", "files"] : []
            let r = try ChildRun.run(DocsyncProcess.binary, ["sync", folder] + options + types, log: work.file("enc-\(step).log"))
            guard r.exitStatus == 0 else { throw ProcessFailure("\(step) exited \(r.exitStatus): \(r.output.suffix(2000))") }
            steps[step] = EncryptedRun.Step(seconds: r.seconds, peakRSSBytes: r.peakRSSBytes)
        }
        return steps
    }
}
