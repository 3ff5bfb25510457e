// swift-tools-version:6.0
import PackageDescription

/// The data path reads top to bottom: file → watcher → scanner → index → outbox → endpoint seam →
/// adapters; then the reference server. Each target declares exactly what it imports.
let package = Package(
    name: "docsync",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "docsync", targets: ["docsync"]),
        .executable(name: "docsync-bench", targets: ["docsync-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.0.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
    ],
    targets: [
        // The document model: an order- and literal-preserving JSON value, identity and docType rules.
        .target(name: "DocsyncModel", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The server-calibrated clock: samples, the NTP-style filter, ServerSync's EMA, the boot-time base.
        .target(name: "DocsyncClock", dependencies: [
            "DocsyncModel",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // glibc calls the Glibc module leaves out: renameat2 (swap or create without replacing), mallopt, pipe2, closefrom for a spawned child.
        .systemLibrary(name: "CGlibcExtras", path: "Sources/CGlibcExtras"),
        // PCRE2 (Debian's libpcre2-dev): schema patterns matched with a limit on each match's work.
        .systemLibrary(name: "CPCRE2", path: "Sources/CPCRE2", pkgConfig: "libpcre2-8", providers: [.apt(["libpcre2-dev"])]),
        // sqlite3_config, variadic in C: process-wide SQLite settings.
        .systemLibrary(name: "CSQLiteExtras", path: "Sources/CSQLiteExtras"),
        // zlib (the system's), for git's loose objects written in process (DocsyncGit).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // Files through one gate: paths from outside never leave the root; reads, atomic replaces,
        // renames and the trash; the tree walker.
        .target(name: "DocsyncFiles", dependencies: ["DocsyncModel", "CGlibcExtras"]),
        // The watcher: inotify through Glibc, recursive, and the event aggregator. It only watches.
        .target(name: "DocsyncWatcher", dependencies: [
            "DocsyncModel", "DocsyncFiles",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        // Statements bound and read through SQLite's C API, for the rows read and written by the thousand.
        .target(name: "DocsyncSQL", dependencies: [
            "CSQLiteExtras",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ]),
        // The local index: one SQLite file (GRDB) with files, documents, tombstones and the outbox.
        .target(name: "DocsyncIndex", dependencies: [
            "DocsyncModel", "DocsyncSQL", "CSQLiteExtras",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ]),
        // The endpoint seam: what the engine needs from any document server (no HTTP in here).
        .target(name: "DocsyncEndpoint", dependencies: ["DocsyncModel", "DocsyncClock"]),
        // What HTTP adapters share: the client, credentials, clock samples from every reply,
        // failures sorted by what to do, multipart file bodies.
        .target(name: "DocsyncHTTP", dependencies: [
            "DocsyncModel", "DocsyncClock", "DocsyncEndpoint",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        // Adapter: the PingPong REST endpoint and the reference endpoint's batch call.
        .target(name: "DocsyncPingPong", dependencies: [
            "DocsyncModel", "DocsyncClock", "DocsyncEndpoint", "DocsyncHTTP",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // Adapter: the sync-rails dialect of the sync-ios seed (one POST, `updated_at` watermarks).
        .target(name: "DocsyncSyncRails", dependencies: [
            "DocsyncModel", "DocsyncEndpoint", "DocsyncHTTP", "DocsyncClock",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // Adapter: Kinto (buckets, collections, records; /v1/batch; _since; 412 conflicts).
        .target(name: "DocsyncKinto", dependencies: [
            "DocsyncModel", "DocsyncEndpoint", "DocsyncHTTP", "DocsyncClock",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // JSON Schema draft 2020-12 on our JSON value: compiled once, checked exactly (numbers as
        // literals), bounded against hostile schemas. No maintained Swift library is in our mirror.
        // With `FolderSchemaCheck`, `validate`'s check of a folder's documents against its schemas.
        .target(name: "DocsyncSchema", dependencies: ["DocsyncModel", "DocsyncFiles", "CPCRE2"]),
        // End-to-end encryption: the folder's keys (wrapped by a passphrase with scrypt), documents
        // and files sealed (ChaCha20-Poly1305), and the endpoint that seals and opens them.
        .target(name: "DocsyncVault", dependencies: [
            "DocsyncModel", "DocsyncEndpoint",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        // The sync engine: scanner, reconciliation, outbox pusher, puller, uploads, the watch loop.
        // Commits of pulled changes (`--git-commit`, `--git-branch`), through git's own plumbing.
        .target(name: "DocsyncGit", dependencies: [
            "CGlibcExtras", "CZlib", "DocsyncFiles", "DocsyncModel",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .target(name: "DocsyncAgent", dependencies: [
            "DocsyncModel", "DocsyncFiles", "DocsyncWatcher", "DocsyncIndex", "DocsyncEndpoint", "DocsyncClock", "DocsyncGit", "DocsyncSchema",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        // The store seam: what any document store keeps (revisions, the change sequence, tombstones),
        // its rules, change pages, and refusals by meaning; the model only, no HTTP.
        .target(name: "DocsyncStore", dependencies: ["DocsyncModel"]),
        // The embedded default store: one SQLite file (GRDB).
        .target(name: "DocsyncSQLiteStore", dependencies: [
            "DocsyncModel", "DocsyncStore", "DocsyncSQL",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The reference endpoint (`docsync serve`): Hummingbird 2 over a store (SQLite by default).
        .target(name: "DocsyncServer", dependencies: [
            "DocsyncModel", "DocsyncClock", "DocsyncSQL", "DocsyncSchema", "DocsyncStore", "DocsyncSQLiteStore",
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // The reference endpoint's store in PostgreSQL (postgres-nio), for several server processes.
        .target(name: "DocsyncPostgres", dependencies: [
            "DocsyncModel", "DocsyncStore",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // `watch --config`: several folders in one YAML file (Yams), checked with line numbers.
        .target(name: "DocsyncConfig", dependencies: [
            "DocsyncModel",
            .product(name: "Yams", package: "Yams"),
        ]),
        // What a running agent or server shows and obeys beyond the engine: the metrics and status
        // listener with its page, systemd's notify protocol, the progress line, memory given back
        // by idle folders, and the services and shutdown deadline the commands run under.
        .target(name: "DocsyncRuntime", dependencies: [
            "DocsyncAgent", "DocsyncClock", "DocsyncFiles", "DocsyncIndex", "DocsyncModel", "DocsyncWatcher", "CGlibcExtras",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .executableTarget(name: "docsync", dependencies: [
            "DocsyncConfig", "DocsyncRuntime",
            "DocsyncAgent", "DocsyncServer", "DocsyncEndpoint", "DocsyncHTTP", "DocsyncPingPong", "DocsyncSyncRails", "DocsyncKinto",
            "DocsyncClock", "DocsyncIndex", "DocsyncModel", "DocsyncFiles", "DocsyncWatcher", "DocsyncPostgres", "DocsyncSchema", "DocsyncStore", "DocsyncSQLiteStore", "CGlibcExtras", "DocsyncVault",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        .executableTarget(name: "docsync-bench", dependencies: [
            "DocsyncModel", "DocsyncClock", "DocsyncTestSupport", "DocsyncFiles", "DocsyncSchema", "DocsyncIndex", "DocsyncGit",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Helpers shared by the tests and the benchmark: processes, temp folders, polling, fault endpoints.
        .target(name: "DocsyncTestSupport", dependencies: [
            "DocsyncModel", "DocsyncStore", "DocsyncEndpoint", "DocsyncClock", "DocsyncGit",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "DocsyncTests", dependencies: [
            "DocsyncModel", "DocsyncClock", "DocsyncFiles", "DocsyncWatcher", "DocsyncIndex", "DocsyncEndpoint", "DocsyncVault",
            "DocsyncHTTP", "DocsyncPingPong", "DocsyncSyncRails", "DocsyncKinto", "DocsyncAgent", "DocsyncServer", "DocsyncPostgres",
            "DocsyncTestSupport", "DocsyncConfig", "DocsyncSQL", "DocsyncSchema", "DocsyncStore", "DocsyncSQLiteStore",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Areas that build and run alone (`swift build --target DocsyncSchemaTests`, then
        // `swift test --skip-build --filter DocsyncSchemaTests`); DocsyncTests holds the engine,
        // the adapters and the end-to-end runs of the binary.
        .testTarget(name: "DocsyncUnitTests", dependencies: [
            "DocsyncModel", "DocsyncIndex", "DocsyncSQL", "DocsyncAgent", "DocsyncEndpoint", "DocsyncServer", "DocsyncTestSupport",
            "DocsyncHTTP", "DocsyncKinto", "DocsyncPingPong", "DocsyncSyncRails", "DocsyncFiles", "DocsyncRuntime", "DocsyncGit",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "DocsyncSchemaTests", dependencies: ["DocsyncModel", "DocsyncFiles", "DocsyncSchema", "DocsyncTestSupport"]),
        .testTarget(name: "DocsyncStoreTests", dependencies: [
            "DocsyncModel", "DocsyncStore", "DocsyncSQLiteStore", "DocsyncPostgres", "DocsyncServer", "DocsyncTestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
