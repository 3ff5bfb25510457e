import CZlib

/// One zlib stream of deflated bytes, handed on as zlib makes them: a loose object's frame
/// (``LooseObject``) and each object of a pack (``PackFile``).
final class Deflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private var out = [UInt8](repeating: 0, count: 64 << 10)
    /// Named in errors: the file the stream is written to.
    private let file: String

    /// Stored (level 0) unless `level` says otherwise.
    init(file: String, level: Int32 = Z_NO_COMPRESSION) throws(GitError) {
        self.file = file
        // zlib's state points back at its stream: the stream has a fixed place, never a copy.
        stream.initialize(to: z_stream())
        // Should it fail, `deinit` still ends the stream (a stream zlib did not start is let be).
        let started = level == Z_NO_COMPRESSION ? docsync_deflate_init_stored(stream) : docsync_deflate_init_level(stream, level)
        guard started == Z_OK else { throw GitError("zlib could not start a stream for \(file)") }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Hands `bytes` to zlib and `sink` what it gives back.
    func add(_ bytes: ArraySlice<UInt8>, to sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) {
        var rest = bytes
        while !rest.isEmpty {
            let part = rest.prefix(1 << 30)
            rest = rest.dropFirst(part.count)
            try deflate(part, finish: false, to: sink)
        }
    }

    /// Ends the stream, `sink` hearing its last bytes.
    func end(to sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) {
        try deflate([], finish: true, to: sink)
    }

    /// Hands `bytes` to zlib and writes what it gives back; with `finish`, until the frame's end.
    private func deflate(_ bytes: ArraySlice<UInt8>, finish: Bool, to sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) {
        var input = bytes
        var status = Z_OK
        repeat {
            let made = input.withUnsafeBytes { from in
                out.withUnsafeMutableBytes { space -> Int in
                    // zlib reads its input only (`next_in` is not const where ZLIB_CONST is unset).
                    stream.pointee.next_in = UnsafeMutablePointer(mutating: from.baseAddress?.assumingMemoryBound(to: Bytef.self))
                    stream.pointee.avail_in = uInt(from.count)
                    stream.pointee.next_out = space.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(space.count)
                    status = CZlib.deflate(stream, finish ? Z_FINISH : Z_NO_FLUSH)
                    stream.pointee.next_in = nil
                    return space.count - Int(stream.pointee.avail_out)
                }
            }
            input = input.suffix(Int(stream.pointee.avail_in))
            // zlib answers Z_BUF_ERROR when it had nothing to do; at the frame's end with room
            // to write, that would be a frame that cannot end.
            guard status == Z_OK || status == Z_STREAM_END || (status == Z_BUF_ERROR && !finish) else {
                throw GitError("zlib failed (\(status)) writing \(file)")
            }
            if made > 0 { try sink(out[..<made]) }
        } while !input.isEmpty || stream.pointee.avail_out == 0 || (finish && status != Z_STREAM_END)
    }
}
