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
        var cpuSeconds = 0.0
        var peakRSSBytes: Int
    }

    var documents = 0
    var attachmentMiB = 0
    /// Per round, per step name: in clear, then sealed.
    /// `encrypt init` at the default scrypt cost into an empty folder: one key derivation (what
    /// every process of an encrypted folder pays once, at start) and one small request.
    var keyDerivation: Step?
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
            let (cc, sc) = (median(clear, name, \.cpuSeconds), median(sealed, name, \.cpuSeconds))
            return "| \(name) | \(fmt(c, 2)) | \(fmt(s, 2)) | \(fmt(c / s, 2))× | \(fmt(cc, 2)) / \(fmt(sc, 2)) | \(rss(clear) >> 20) | \(rss(sealed) >> 20) |"
        }
        let derivation = keyDerivation.map { "| key derivation at start (scrypt N=2^17, r=8), once a process | | \(fmt($0.seconds, 2)) | | – / \(fmt($0.cpuSeconds, 2)) | | \($0.peakRSSBytes >> 20) |" }
        return """
            ## encrypted run: \(documents) documents imported and pulled, one \(attachmentMiB) MiB attachment up and down (\(clear.count) rounds, medians)

            Each step is one `docsync sync` process. The sealed steps use a vault made with
            `--scrypt-log-n 10`, so that they measure the seals; the default derivation, which every
            process of an encrypted folder pays once at start, is its own row.

            | step | in clear, s | sealed, s | speed sealed / clear | agent CPU clear / sealed, s | peak RSS in clear, MiB | peak RSS sealed, MiB |
            |---|---:|---:|---:|---:|---:|---:|
            \((rows + (derivation.map { [$0] } ?? [])).joined(separator: "\n"))
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
        run.keyDerivation = try await keyDerivation(work: work)
        for round in 0..<rounds {
            for sealed in round % 2 == 0 ? [false, true] : [true, false] {
                let steps = try await encryptedRound(sealed: sealed, tag: "\(round)\(sealed ? "s" : "c")", docsDir: docsDir, work: work)
                if sealed { run.sealed.append(steps) } else { run.clear.append(steps) }
                let line = EncryptedRun.steps.map { "\($0) \(fmt(steps[$0]?.seconds ?? 0, 2)) s" }.joined(separator: ", ")
                log("encrypted run, round \(round + 1), \(sealed ? "sealed" : "in clear"): \(line)")
            }
        }
        return run
    }

    /// One round's four steps on an empty server of its own; the folders start without an index.
    private func encryptedRound(sealed: Bool, tag: String, docsDir: String, work: TempFolder) async throws -> [String: EncryptedRun.Step] {
        let name = "serve-enc"
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        // Folders of their own each round, removed with the work folder at the end: 100,000 files
        // deleted just before the next round's pull made ext4 look past each recently deleted
        // inode for every file it created (`recently_deleted`, 30 s), and the pull took 2-5 times
        // as long, in clear as sealed, as the system time showed.
        let folders = ["enc-seed", "enc-pulled", "enc-attach-pulled"].map { work.file("\($0)-\(tag)") }
        for path in folders + [docsDir + "/.docsync", work.file("enc-attach/.docsync")] { try? FileManager.default.removeItem(atPath: path) }
        for path in folders { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        var options = ["--endpoint", api.baseURL, "--token-file", work.file("token")]
        if sealed {
            let made = try ChildRun.run(
                DocsyncProcess.binary, ["encrypt", "init", folders[0], "--passphrase-file", work.file("passphrase"), "--scrypt-log-n", "10"] + options,
                log: work.file("enc-init.log"))
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
            steps[step] = EncryptedRun.Step(seconds: r.seconds, cpuSeconds: r.cpuSeconds, peakRSSBytes: r.peakRSSBytes)
        }
        return steps
    }

    /// One `encrypt init` at the default cost, on a server of its own.
    private func keyDerivation(work: TempFolder) async throws -> EncryptedRun.Step {
        let name = "serve-enc-key"
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let folder = work.file("enc-key")
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let r = try ChildRun.run(
            DocsyncProcess.binary,
            ["encrypt", "init", folder, "--endpoint", api.baseURL, "--token-file", work.file("token"), "--passphrase-file", work.file("passphrase")],
            log: work.file("enc-key.log"))
        guard r.exitStatus == 0 else { throw ProcessFailure("encrypt init exited \(r.exitStatus): \(r.output.suffix(2000))") }
        return EncryptedRun.Step(seconds: r.seconds, cpuSeconds: r.cpuSeconds, peakRSSBytes: r.peakRSSBytes)
    }
}
