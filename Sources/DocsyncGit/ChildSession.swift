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
    /// Output read and not yet taken: `buffer[start..<end]`.
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)
    private var start = 0
    private var end = 0

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
        var searched = start
        while true {
            if let newline = buffer[searched..<end].firstIndex(of: 0x0a) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                return line
            }
            let looked = end - start
            compact()
            searched = start + looked
            guard end < buffer.count, fill() else { return nil }
        }
    }

    /// Hands the next `count` bytes of output to `sink` as they come, in pieces of at most 64 KiB
    /// (the sink must not keep a piece); `false` when the output ends first.
    func read(_ count: Int, into sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) -> Bool {
        var left = count
        while left > 0 {
            if start == end {
                start = 0
                end = 0
                guard fill() else { return false }
            }
            let piece = min(left, end - start)
            try sink(buffer[start..<(start + piece)])
            start += piece
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
        var rest = Array(buffer[start..<end])
        start = end
        rest.append(contentsOf: ChildProcess.readAll(ends.output))
        drained.wait()
        close(ends.output)
        close(ends.errors)
        let done = ChildProcess.Finished(status: ChildProcess.waitForExit(pid), stdout: rest, stderr: errors.bytes.withLock { $0 })
        finished = done
        return done
    }

    /// Moves the unread output to the front of the buffer.
    private func compact() {
        guard start > 0 else { return }
        buffer.withUnsafeMutableBytes { raw in
            if end > start { memmove(raw.baseAddress!, raw.baseAddress! + start, end - start) }
        }
        end -= start
        start = 0
    }

    /// Reads more output after `end`; `false` at its end (or on an error reading it, or once the
    /// child is finished: its descriptors are closed, and their numbers may be another file's).
    private func fill() -> Bool {
        guard finished == nil else { return false }
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(ends.output, $0.baseAddress! + end, $0.count - end) }
            if n > 0 {
                end += n
                return true
            }
            if n < 0 && errno == EINTR { continue }
            return false
        }
    }
}
