import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child talked to while it runs, from one thread: its input written a piece at a time, its
/// output read as it comes (`cat-file --batch` asked for one tree after another, each tree
/// handed on in pieces; `hash-object --stdin` fed a tree as it is merged). Its errors are
/// collected meanwhile, so it never stops on a full pipe. Started as ``ChildProcess`` starts a
/// child (no signal blocked, input through a socket written without SIGPIPE).
///
/// A session dropped before ``finish()`` (a step that threw) kills its child and reaps it.
final class ChildSession {
    private let ends: ChildProcess.Ends
    private let pid: pid_t
    private let errors = Errors()
    private let drained = DispatchGroup()
    private var inputOpen = true
    /// How the child ended, once ``finish()`` has seen it end.
    private var finished: ChildProcess.Finished?
    /// Output read and not yet taken (at most 64 KiB: this is for the short lines git's plumbing
    /// prints, and for output handed on in pieces).
    private var output: DescriptorReader

    private final class Errors: Sendable {
        let bytes = Mutex<[UInt8]>([])
    }

    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws(GitError) {
        let ends = try ChildProcess.Ends()
        do {
            pid = try ChildProcess.spawn(executable, [executable] + arguments, environment: environment, ends: ends)
        } catch {
            ends.closeAll()
            throw error
        }
        ends.closeChildSides()
        self.ends = ends
        output = DescriptorReader(fd: ends.output, longest: 64 << 10)
        let (fd, errors) = (ends.errors, errors)
        DispatchQueue.global().async(group: drained) {
            let bytes = ChildProcess.readAll(fd)
            errors.bytes.withLock { $0 = bytes }
        }
    }

    deinit {
        guard finished == nil else { return }
        kill(pid, SIGKILL)
        _ = finish()
    }

    /// Writes `bytes` to the child's input; `false` when the child no longer reads it (its
    /// status and errors, from ``finish()``, say why).
    @discardableResult
    func write(_ bytes: ArraySlice<UInt8>) -> Bool {
        inputOpen && bytes.withUnsafeBytes { ChildProcess.writeAll($0, to: ends.input) }
    }

    /// The next line of output, without its newline; `nil` when the output ends first or the
    /// line is longer than the buffer (64 KiB: this is for the short lines git's plumbing prints).
    func readLine() -> [UInt8]? {
        var searched = output.at
        while true {
            if let newline = output.bytes[searched...].firstIndex(of: 0x0a) {
                let line = Array(output.bytes[output.at..<newline])
                output.at = newline + 1
                return line
            }
            let looked = output.available
            guard more() else { return nil }
            searched = output.at + looked
        }
    }

    /// Hands the next `count` bytes of output to `sink` as they come, in pieces of at most 64 KiB
    /// (the sink must not keep a piece); `false` when the output ends first.
    func read(_ count: Int, into sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) -> Bool {
        var left = count
        while left > 0 {
            guard output.available > 0 || more() else { return false }
            let piece = min(left, output.available)
            try sink(output.bytes[output.at..<(output.at + piece)])
            output.at += piece
            left -= piece
        }
        return true
    }

    /// Closes the child's input: it sees the end of what it reads.
    func closeInput() {
        guard inputOpen else { return }
        inputOpen = false
        close(ends.input)
    }

    /// Closes the input, reads the rest of the output, and waits for the child to end (once: a
    /// second call says the same).
    func finish() -> ChildProcess.Finished {
        if let finished { return finished }
        closeInput()
        var rest = Array(output.bytes[output.at...])
        output.at = output.bytes.count
        rest.append(contentsOf: ChildProcess.readAll(ends.output))
        drained.wait()
        close(ends.output)
        close(ends.errors)
        let done = ChildProcess.Finished(status: ChildProcess.waitForExit(pid), stdout: rest, stderr: errors.bytes.withLock { $0 })
        finished = done
        return done
    }

    /// Reads more output; `false` at its end (or on an error reading it, or once the child is
    /// finished: its descriptors are closed, and their numbers may be another file's).
    private func more() -> Bool {
        finished == nil && output.more()
    }
}
