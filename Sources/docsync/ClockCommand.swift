import ArgumentParser
import AsyncHTTPClient
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import Foundation

struct ClockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock",
        abstract: "Estimate the endpoint's clock: offset from this machine, error bound, minimum delay.")

    @OptionGroup var endpoint: EndpointOptions

    @Option(help: "How many requests to sample.")
    var samples = 8

    @Option(help: "Estimator: min-delay (NTP's clock filter) or ema (ServerSync's moving average).")
    var method: ServerClock.Method = .minDelay

    @Flag(help: "Print exactly one JSON object.")
    var json = false

    func validate() throws {
        guard (1...1000).contains(samples) else { throw ValidationError("--samples must be between 1 and 1000") }
    }

    func run() async throws {
        let clock = ServerClock(method: method, window: max(16, samples))
        let client = try makeHTTPClient()
        let context = EndpointContext(clientID: "clock", clock: clock, requestTimeout: .seconds(30), credential: try endpoint.token())
        let api = try EndpointChoice(url: endpoint.endpoint).factory(client: client)(context)
        var failure: EndpointError?
        for _ in 0..<samples {
            do throws(EndpointError) {
                try await api.sampleClock()
            } catch {
                failure = error
                break
            }
        }
        try await client.shutdown()
        let estimate = clock.estimate
        let offsetNs = estimate.map(clock.wallOffset) ?? 0
        func ms(_ ns: Int64) -> JSONValue { .number(String(Double(ns) / 1_000_000)) }
        if json {
            let object: JSONValue = .object(JSONObject([
                ("offset_ms", ms(offsetNs)),
                ("bound_ms", ms(estimate?.bound ?? 0)),
                ("min_delay_ms", ms(estimate?.minDelay ?? 0)),
                ("samples", .number(String(estimate?.samples ?? 0))),
                ("source", .string(estimate?.source.rawValue ?? "none")),
            ].map { (key: $0.0, value: $0.1) }))
            emit(JSONWriter.string(object))
        } else if let estimate {
            emit("offset: \(Double(offsetNs) / 1_000_000) ms (server minus local)")
            emit("bound: ±\(Double(estimate.bound) / 1_000_000) ms")
            emit("min delay: \(Double(estimate.minDelay) / 1_000_000) ms")
            emit("samples: \(estimate.samples) (\(estimate.source.rawValue))")
        } else {
            emit("no usable time source: \(failure?.description ?? "the endpoint sent no X-Sync-UTC or Date header")")
        }
        if estimate == nil { throw ExitCode(2) }
    }
}

extension ServerClock.Method: ExpressibleByArgument {}
