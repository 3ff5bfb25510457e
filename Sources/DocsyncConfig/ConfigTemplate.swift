import Foundation

/// What `docsync init DIR --endpoint URL` writes: a commented config naming one folder, or one
/// more `folders:` entry added to a config that exists.
public enum ConfigTemplate {
    /// The default config file: `$XDG_CONFIG_HOME/docsync/docsync.yaml` (`~/.config/…` without it).
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory() + "/.config"
        return base + "/docsync/docsync.yaml"
    }

    public static let header = """
        # docsync: the folders one `docsync watch --config THIS_FILE` keeps in sync, each with its own
        # endpoint, credentials and index (`.docsync/` inside the folder).
        # Relative paths start from this file's folder; `~/` is your home folder.
        # Flags given to `watch` override what is set here, for every folder (e.g. --log-level debug).

        # Log level: trace, debug, info, notice, warning, error.
        log_level: info
        # Log lines as `text` or `json` (for log shippers).
        log_format: text
        # The status page (/), the live status (/status) and Prometheus metrics (/metrics) of every
        # folder, with no token: keep it on loopback. Remove the line to turn the listener off.
        # metrics_addr: 127.0.0.1:9464

        folders:

        """

    /// One `folders:` entry, with the optional keys shown commented out.
    public static func entry(name: String, path: String, endpoint: String, tokenFile: String) -> String {
        """
          - name: \(quoted(name))
            # The folder to sync.
            path: \(quoted(path))
            # The server: http(s)://HOST:PORT (the reference endpoint or another with its routes),
            # kinto+http(s)://HOST:PORT/v1/buckets/BUCKET or syncrails+http(s)://… .
            endpoint: \(quoted(endpoint))
            # A file whose first line is the token (chmod 600); without it, DOCSYNC_TOKEN.
            token_file: \(quoted(tokenFile))
            # PEM certificates to trust for an https:// endpoint with a self-signed certificate.
            # ca_file: server.pem
            # Paths left out of sync, as lines of a .docsyncignore (added to the folder's own).
            # ignore:
            #   - drafts/
            #   - "*.tmp.json"
            # Only these docTypes are synced (the others are neither pulled nor pushed):
            # types: [note, invoice]
            # exclude_types: [scratch]
            # max_file_size: 16777216   # bytes
            # max_download_size: 4294967296   # bytes; larger files others attached are not fetched
            # request_timeout: 30       # seconds
            # poll_interval: 10         # seconds, for endpoints without a long poll
            # deletion_guard: 50        # % of the folder one pull may delete before it waits for `docsync resolve --deletions`; off

        """
    }

    /// `text` as a double-quoted YAML scalar.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += String(format: "\\x%02X", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
