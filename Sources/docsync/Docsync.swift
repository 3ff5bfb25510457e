import CGlibcExtras
import ArgumentParser
import Glibc

@main
struct Docsync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docsync",
        abstract: "Keep a folder of JSON documents in sync with a document server.",
        discussion: """
            Every *.json file under the folder is one document: a JSON object with an "id" (assigned \
            and written into the file if missing) and a "docType" (from the field, else the first \
            folder under the root). Tokens come from --token-file or DOCSYNC_TOKEN, never the command line.
            """,
        subcommands: [Up.self, Init.self, Watch.self, Sync.self, Status.self, Doctor.self, Conflicts.self, Resolve.self, Repair.self, Encrypt.self, Serve.self, TokenCommand.self, Validate.self, ClockCommand.self])

    static func main() async {
        // One malloc arena: glibc otherwise gives each busy thread its own, and each keeps what
        // a burst (an initial import) freed, a large share of the agent's peak RSS (BENCHMARKS.md)
        // for no measurable gain in speed.
        // A MALLOC_ARENA_MAX in the environment is the user's choice and is left alone.
        if getenv("MALLOC_ARENA_MAX") == nil { mallopt(M_ARENA_MAX, 1) }
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
