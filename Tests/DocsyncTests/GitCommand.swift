import DocsyncTestSupport
import Foundation

/// Runs git in `folder` and returns what it printed; the test fails with git's message if it fails.
@discardableResult
func git(_ arguments: [String], in folder: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["git", "-C", folder] + arguments
    var env = ProcessInfo.processInfo.environment
    env["GIT_AUTHOR_NAME"] = "User"
    env["GIT_AUTHOR_EMAIL"] = "user@example.org"
    env["GIT_COMMITTER_NAME"] = "User"
    env["GIT_COMMITTER_EMAIL"] = "user@example.org"
    process.environment = env
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw ProcessFailure("git \(arguments): \(errors)") }
    return text
}
