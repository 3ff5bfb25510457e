import DocsyncClock
import DocsyncEndpoint
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import DocsyncWatcher
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One finding of `docsync doctor`: what was checked, how it stands, and what to do about it.
struct Finding: Sendable {
    enum Verdict: String, Sendable {
        case ok, warn, fail
    }

    var check: String
    var verdict: Verdict
    var detail: String
    var advice: String?

    var json: JSONValue {
        .object(JSONObject([
            (key: "check", value: .string(check)), (key: "status", value: .string(verdict.rawValue)),
            (key: "detail", value: .string(detail)), (key: "advice", value: advice.map { .string($0) } ?? .null),
        ]))
    }

    var text: String {
        let mark = switch verdict {
        case .ok: "ok  "
        case .warn: "warn"
        case .fail: "FAIL"
        }
        return "\(mark) \(check): \(detail)" + (advice.map { "\n       → \($0)" } ?? "")
    }
}

/// The checks, each on its own: the tree and the kernel's limits, the disk, the index, the endpoint.
enum DoctorChecks {
    /// The watches the tree needs (one a folder) against `fs.inotify.max_user_watches`, and the
    /// document files that cannot be read.
    static func tree(root: String, watchLimit: Int?) -> [Finding] {
        let walker = TreeWalker(root: root, ignore: TreeWalker.ignoreRules(root: root))
        var folders = 0  // the walk reports the root too
        var closed: [String] = []  // folders the walk cannot list: nothing in them is synced
        let files = walker.walk(onDirectory: { folder in
            folders += 1
            if access(walker.absolute(folder), R_OK | X_OK) != 0 { closed.append(folder.isEmpty ? "." : folder) }
        }).filter { DocumentRules.isDocumentPath($0.path) }
        var findings: [Finding] = []
        if let limit = watchLimit ?? InotifySettings.value("max_user_watches") {
            let advice = "sudo sysctl fs.inotify.max_user_watches=\(max(524_288, folders * 2)) (and in /etc/sysctl.d/ to keep it); until then folders without a watch are rescanned every 30 s"
            if folders > limit {
                findings.append(Finding(check: "inotify watches", verdict: .fail, detail: "the tree has \(folders) folders; fs.inotify.max_user_watches is \(limit)", advice: advice))
            } else if folders * 10 > limit * 8 {
                findings.append(Finding(check: "inotify watches", verdict: .warn, detail: "the tree has \(folders) folders of fs.inotify.max_user_watches \(limit), shared with this user's other programs", advice: advice))
            } else {
                findings.append(Finding(check: "inotify watches", verdict: .ok, detail: "\(folders) \(folders == 1 ? "folder" : "folders"), limit \(limit)"))
            }
        }
        if let instances = instances() { findings.append(instances) }
        if let queue = InotifySettings.value("max_queued_events"), queue < 16_384 {
            findings.append(Finding(
                check: "inotify queue", verdict: .warn, detail: "fs.inotify.max_queued_events is \(queue): a burst of changes overflows it into a full rescan",
                advice: "sudo sysctl fs.inotify.max_queued_events=16384"))
        }
        if !closed.isEmpty {
            findings.append(Finding(
                check: "folders", verdict: .fail,
                detail: "\(closed.count) folders cannot be read, so nothing in them syncs: \(closed.prefix(5).joined(separator: ", "))\(closed.count > 5 ? ", …" : "")",
                advice: "give the user that runs docsync read and search access (chmod u+rx / chown), or list them in .docsyncignore"))
        }
        let unreadable = files.filter { access(walker.absolute($0.path), R_OK) != 0 }.map(\.path)
        if unreadable.isEmpty {
            findings.append(Finding(check: "files", verdict: .ok, detail: "\(files.count) documents, all readable"))
        } else {
            findings.append(Finding(
                check: "files", verdict: .fail,
                detail: "\(unreadable.count) of \(files.count) documents cannot be read: \(unreadable.prefix(5).joined(separator: ", "))\(unreadable.count > 5 ? ", …" : "")",
                advice: "give the user that runs docsync read access (chmod/chown), or list them in .docsyncignore"))
        }
        return findings
    }

    /// The inotify instances this user's processes hold (the ones `doctor` can see) against
    /// `fs.inotify.max_user_instances`: `watch` needs one, however many folders it runs.
    static func instances() -> Finding? {
        guard let limit = InotifySettings.value("max_user_instances") else { return nil }
        let inUse = InotifySettings.instancesInUse()
        let advice = "sudo sysctl fs.inotify.max_user_instances=\(max(512, limit * 2)) (and in /etc/sysctl.d/ to keep it)"
        let detail = "\(inUse) of fs.inotify.max_user_instances \(limit) in use by this user's programs"
        if inUse >= limit { return Finding(check: "inotify instances", verdict: .fail, detail: detail + "; docsync needs one more", advice: advice) }
        if inUse * 10 > limit * 8 { return Finding(check: "inotify instances", verdict: .warn, detail: detail, advice: advice) }
        return Finding(check: "inotify instances", verdict: .ok, detail: detail)
    }

    /// Free space on the folder's file system.
    static func disk(root: String) -> Finding {
        var st = statvfs()
        guard statvfs(root, &st) == 0 else { return Finding(check: "disk", verdict: .fail, detail: "cannot stat \(root): \(String(cString: strerror(errno)))") }
        let free = Int64(st.f_bavail) * Int64(st.f_frsize)
        let total = Int64(st.f_blocks) * Int64(st.f_frsize)
        let detail = "\(free >> 20) MiB free of \(total >> 20) MiB"
        if free < 64 << 20 { return Finding(check: "disk", verdict: .fail, detail: detail, advice: "free space: pulls and the index stop writing when the disk is full") }
        if free < 1 << 30 || free * 20 < total { return Finding(check: "disk", verdict: .warn, detail: detail, advice: "less than 1 GiB or 5 % free") }
        return Finding(check: "disk", verdict: .ok, detail: detail)
    }

    /// `PRAGMA quick_check` of the folder's index, when it has one.
    static func index(root: String) async -> Finding {
        guard Index.exists(root: root) else { return Finding(check: "index", verdict: .ok, detail: "none yet (made by the first watch or sync)") }
        do {
            let result = try await Index.open(root: root).read { try $0.quickCheck() }
            if result == ["ok"] { return Finding(check: "index", verdict: .ok, detail: "quick_check ok") }
            return Finding(
                check: "index", verdict: .fail, detail: "quick_check: \(result.prefix(3).joined(separator: "; "))",
                advice: "stop the agent, move .docsync/ aside and run `docsync sync` (the folder and the server are the truth; the index is rebuilt)")
        } catch {
            return Finding(check: "index", verdict: .fail, detail: "cannot open it: \(error)", advice: "check .docsync/'s permissions and the disk")
        }
    }

    /// The endpoint answers, takes the credential, and its clock can be estimated.
    static func endpoint(_ api: any DocumentEndpoint, clock: ServerClock) async -> [Finding] {
        var findings: [Finding] = []
        do throws(EndpointError) {
            _ = try await api.pull(after: nil, wait: nil)
            findings.append(Finding(check: "endpoint", verdict: .ok, detail: "\(api.location) answers and takes the credential"))
        } catch .unsupported {
            findings.append(Finding(check: "endpoint", verdict: .ok, detail: "\(api.location) (push only: nothing to pull)"))
        } catch .unauthorized(let why) {
            findings.append(Finding(check: "endpoint", verdict: .fail, detail: "\(api.location) refuses the credential: \(why)", advice: "check --token-file / DOCSYNC_TOKEN"))
        } catch {
            findings.append(Finding(check: "endpoint", verdict: .fail, detail: "\(api.location): \(error)", advice: "check the URL, the network, and that the server runs"))
            return findings
        }
        for _ in 0..<4 { try? await api.sampleClock() }
        if let estimate = clock.estimate {
            let offset = Double(clock.wallOffset(estimate)) / 1e9
            let bound = Double(estimate.bound) / 1e9
            let detail = "offset \(String(format: "%.3f", offset)) s ± \(String(format: "%.3f", bound)) s (\(estimate.source.rawValue))"
            let far = abs(offset) > 60
            findings.append(Finding(
                check: "clock", verdict: far ? .warn : .ok, detail: detail,
                advice: far ? "this machine's clock is off; changes are stamped in the server's time anyway, but other tools here are not" : nil))
        } else {
            findings.append(Finding(check: "clock", verdict: .warn, detail: "no time from the server", advice: "changes carry this machine's time until it sends one"))
        }
        return findings
    }
}
