import ArgumentParser
import DocsyncAgent
import DocsyncClock
import DocsyncEndpoint
import DocsyncModel
import DocsyncVault
import Foundation
import Logging

/// `docsync encrypt`: end-to-end encryption of a folder (docs/ENCRYPTION.md).
struct Encrypt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn end-to-end encryption on for a folder, or change its passphrase.",
        subcommands: [EncryptInit.self, ChangePassphrase.self])
}

/// `docsync encrypt init DIR`: the folder's key made, stored on the server wrapped, and every
/// document sent again sealed.
struct EncryptInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make the folder's key, store it on the server wrapped by the passphrase, and send every document again sealed.",
        discussion: """
            The folder is synced in clear first, so that every document goes out again sealed over the server's current version. \
            The recovery key is printed once: keep it where you keep passwords; it opens the folder when the passphrase is lost. \
            Then start every agent of the folder with --passphrase-file.
            """)

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var tuning: AgentTuning

    @Option(help: "scrypt's cost as log2(N), from 10 to 20 (default: 17, about half a second and 128 MiB on a laptop; each agent spends it once at start). Lower it for a small device, raise it for a weak passphrase.")
    var scryptLogN = 17

    func validate() throws {
        guard (10...20).contains(scryptLogN) else { throw ValidationError("--scrypt-log-n must be from 10 to 20") }
    }

    func run() async throws {
        let (level, format) = try tuning.logging()
        let logger = bootstrapLogging(level, format: format)
        guard let passphrase = try resolvePassphrase(file: tuning.passphraseFile) else {
            throw ValidationError("encrypt init needs --passphrase-file FILE (or DOCSYNC_PASSPHRASE)")
        }
        guard passphrase.count >= VaultSetup.minimumLength else {
            throw ValidationError("the passphrase is shorter than \(VaultSetup.minimumLength) characters: choose a longer one (a few random words)")
        }
        var clear = tuning
        clear.passphraseFile = nil
        // In clear first: every document the server has is then known at its current revision.
        let before = try await withAgent(directory: directory, endpoint: endpoint, tuning: clear, passphrase: .clear, logger: logger) { try await $0.syncOnce() }
        guard before.complete else { throw VaultRefusal("the folder is not in sync yet (\(before.failure ?? "\(before.pending) pending")); nothing was changed") }
        let root = absolutePath(directory)
        let cost = ScryptCost(n: 1 << scryptLogN, r: 8, p: 1)
        let recovery = try await VaultSetup.create(root: root, endpoint: endpoint, passphrase: passphrase, cost: cost, logger: logger)
        emit("encryption is on for \(root): the server now refuses documents in clear")
        emit("recovery key (shown once; it opens the folder if the passphrase is lost):")
        emit("  \(recovery)")
        let report = try await withAgent(directory: directory, endpoint: endpoint, tuning: tuning, passphrase: .given(passphrase), logger: logger) { agent in
            let queued = try await agent.sendAllAgain()
            emit("sending \(queued) documents again, sealed")
            return try await agent.syncOnce()
        }
        if report.complete {
            emit("in sync, sealed; start every agent of this folder with --passphrase-file")
        } else {
            emit("not all sent yet (\(report.failure ?? "\(report.pending) pending")): the next watch or sync with --passphrase-file sends the rest")
            throw ExitCode(2)
        }
    }
}

/// `docsync encrypt change-passphrase DIR`: the same key wrapped for another passphrase; no
/// document is sent again.
struct ChangePassphrase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "change-passphrase",
        abstract: "Wrap the folder's key for a new passphrase (a few hundred bytes sent; no document is sent again).",
        discussion: "With --recovery-key-file instead of --passphrase-file when the passphrase is lost. Other agents then need the new passphrase at their next start.")

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var endpoint: EndpointOptions

    @Option(help: "The current passphrase: the first line of this file.")
    var passphraseFile: String?

    @Option(help: "The recovery key printed by `encrypt init`, in this file (instead of the passphrase).")
    var recoveryKeyFile: String?

    @Option(help: "The new passphrase: the first line of this file.")
    var newPassphraseFile: String

    func validate() throws {
        guard (passphraseFile == nil) != (recoveryKeyFile == nil) else { throw ValidationError("give one of --passphrase-file and --recovery-key-file") }
    }

    func run() async throws {
        let logger = bootstrapLogging(.warning)
        let root = absolutePath(directory)
        guard let new = try resolvePassphrase(file: newPassphraseFile, environment: [:]), new.count >= VaultSetup.minimumLength else {
            throw ValidationError("the new passphrase is shorter than \(VaultSetup.minimumLength) characters")
        }
        let unlock: VaultSetup.Unlock
        if let recoveryKeyFile {
            unlock = .recovery(try resolvePassphrase(file: recoveryKeyFile, environment: [:]) ?? "")
        } else {
            unlock = .passphrase(try resolvePassphrase(file: passphraseFile, environment: [:]) ?? "")
        }
        let sent = try await VaultSetup.rewrap(root: root, endpoint: endpoint, unlock: unlock, to: new, logger: logger)
        emit("the passphrase of \(root) is changed (\(sent) bytes sent); other agents need the new one at their next start")
    }
}
